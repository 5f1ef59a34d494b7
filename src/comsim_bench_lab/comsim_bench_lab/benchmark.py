"""Measure render frames/s (per camera, realism on/off, several resolutions), physics steps/s
and expert success rates on this machine:  python -m comsim_bench_lab.benchmark [--success N]
"""
from __future__ import annotations

import argparse
import copy
import time
from pathlib import Path

import numpy as np

from comsim_bench_lab.config import LabConfig
from comsim_bench_lab.lab import BenchLab
from comsim_bench_lab.realism import RealismProfile
from comsim_bench_lab.rollout import run_expert_episode

CONFIG_DIR = Path(__file__).resolve().parents[3] / 'config' / 'bench_lab'


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--config', default=str(CONFIG_DIR / 'lab.yaml'))
    parser.add_argument('--realism', default=str(CONFIG_DIR / 'realism.yaml'))
    parser.add_argument('--success', type=int, default=0, help='seeds per task/region for success rates')
    args = parser.parse_args()
    cfg, prof = LabConfig.load(args.config), RealismProfile.load(args.realism)
    for h, w in ((120, 160), (240, 320), (480, 640)):
        for realism in (None, prof):
            lab = BenchLab(scaled(cfg, w, h), realism=realism)
            fps = render_fps(lab, plain=realism is None)
            lab.close()
            print(f'render {h}x{w} realism={"on " if realism else "off"}: {fps:6.1f} frames/s per camera',
                  flush=True)
    lab = BenchLab(cfg, realism=prof)
    print(f'physics: {physics_sps(lab):.0f} steps/s (timestep {lab.timestep} s)', flush=True)
    for task in lab.tasks if args.success else ():
        for region in ('id', 'ood'):
            res = [run_expert_episode(lab, lab.robot, task, s, region) for s in range(args.success)]
            durs = [d for _, d in res]
            print(f'expert {task} {region}: {np.mean([ok for ok, _ in res]) * 100:.0f}% of {len(res)}, '
                  f'episode {min(durs):.1f}-{max(durs):.1f} s', flush=True)
    lab.close()


if __name__ == '__main__':
    main()
