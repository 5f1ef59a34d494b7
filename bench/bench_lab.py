"""Bench lab benchmark: render frames/s per camera with the realism profile
on and off (off = plain MuJoCo rendering of the same scene, the baseline, same process), physics
steps/s, the real-time factor of the lab loop (physics + joint states at 200 Hz + two cameras at
30 Hz, no ROS), and expert success rates.

    .venv/bin/python bench/bench_lab.py [--success N] [--out bench/results/bench_lab.json]
"""
from __future__ import annotations

import argparse
import copy
import time
from pathlib import Path

import numpy as np
from provenance import add_out_argument, machine, write_result

from comsim_bench_lab.config import LabConfig
from comsim_bench_lab.lab import BenchLab
from comsim_bench_lab.realism import RealismProfile
from comsim_bench_lab.rollout import run_expert_episode

CONFIG_DIR = Path(__file__).resolve().parents[1] / 'config' / 'bench_lab'


def scaled(cfg: LabConfig, width: int, height: int) -> LabConfig:
    """Same lab with every camera resampled to width x height (intrinsics scaled)."""
    out = copy.deepcopy(cfg)
    for cam in out.cameras.values():
        sx, sy = width / cam.width, height / cam.height
        cam.width, cam.height = width, height
        cam.fx, cam.cx, cam.fy, cam.cy = cam.fx * sx, cam.cx * sx, cam.fy * sy, cam.cy * sy
    return out


def render_fps(lab: BenchLab, plain: bool, n: int = 30) -> float:
    render = lab.render_plain if plain else lab.render
    for cam in lab.camera_names:
        render(cam)
    t0 = time.perf_counter()
    for i in range(n):
        lab.step(5)
        render(lab.camera_names[i % len(lab.camera_names)])
    return n / (time.perf_counter() - t0)


def physics_sps(lab: BenchLab, steps: int = 5000) -> float:
    lab.reset('stack_blocks', 0)
    t0 = time.perf_counter()
    lab.step(steps)
    return steps / (time.perf_counter() - t0)


def real_time_factor(lab: BenchLab, sim_seconds: float = 3.0, cam_hz: float = 30.0,
                     js_hz: float = 200.0) -> float:
    """Sim seconds per wall second of the node's loop body: step to each joint-state time,
    render every camera when a frame is due (ROS publishing excluded)."""
    lab.reset('stack_blocks', 0)
    t_end = lab.time + sim_seconds
    next_js = next_cam = lab.time
    t0 = time.perf_counter()
    while lab.time < t_end:
        next_js += 1.0 / js_hz
        lab.step(max(1, int(np.ceil((next_js - lab.time) / lab.timestep - 1e-9))))
        lab.joint_state()
        if lab.time + 1e-9 >= next_cam:
            for cam in lab.camera_names:
                lab.render(cam)
            next_cam += 1.0 / cam_hz
    return sim_seconds / (time.perf_counter() - t0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--config', default=str(CONFIG_DIR / 'lab.yaml'))
    parser.add_argument('--realism', default=str(CONFIG_DIR / 'realism.yaml'))
    parser.add_argument('--success', type=int, default=0,
                        help='seeds per task/region for success rates')
    add_out_argument(parser, __file__)
    args = parser.parse_args()
    cfg, prof = LabConfig.load(args.config), RealismProfile.load(args.realism)
    result = {'render_fps_per_camera': {}, 'real_time_factor': {}}
    for h, w in ((120, 160), (240, 320), (480, 640)):
        fps = {}
        for realism in (None, prof):
            lab = BenchLab(scaled(cfg, w, h), realism=realism)
            fps['on' if realism else 'off'] = render_fps(lab, plain=realism is None)
            if realism is not None:
                result['real_time_factor'][f'{h}x{w}'] = real_time_factor(lab)
            lab.close()
        fps['ratio_on_to_off'] = fps['on'] / fps['off']
        result['render_fps_per_camera'][f'{h}x{w}'] = fps
        print(f'render {h}x{w}: realism on {fps["on"]:6.1f}, off (plain MuJoCo) {fps["off"]:6.1f} '
              f'frames/s per camera (ratio {fps["ratio_on_to_off"]:.2f}); lab loop real-time '
              f'factor {result["real_time_factor"][f"{h}x{w}"]:.2f}', flush=True)
    lab = BenchLab(cfg, realism=prof)
    result['physics_steps_per_s'] = physics_sps(lab)
    print(f'physics: {result["physics_steps_per_s"]:.0f} steps/s (timestep {lab.timestep} s)',
          flush=True)
    for task in lab.tasks if args.success else ():
        for region in ('id', 'ood'):
            res = [run_expert_episode(lab, lab.robot, task, s, region) for s in range(args.success)]
            durs = [d for _, d in res]
            rate = np.mean([ok for ok, _ in res]) * 100
            result.setdefault('expert_success', {})[f'{task}/{region}'] = {
                'successes': int(sum(ok for ok, _ in res)), 'episodes': len(res),
                'duration_s': [min(durs), max(durs)]}
            print(f'expert {task} {region}: {rate:.0f}% of {len(res)}, '
                  f'episode {min(durs):.1f}-{max(durs):.1f} s', flush=True)
    lab.close()
    write_result(args.out, result, machine())


if __name__ == '__main__':
    main()
