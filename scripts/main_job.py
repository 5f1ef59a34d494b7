"""The main job: the whole pipeline that exists so far, on the bench lab, with a report.

Stages: (1) record: start the recording graph (bench lab, scripted teleop, recorder), record N
episodes per task unattended; (2) twin: the lab captures calibration views, the twin calibrates,
aligns each recorded episode, replays it into a paired episode and generates sim episodes;
(3) neural simulator: train on the paired episodes, translate the sim episodes into pseudo-real
ones, ablation table, and a few translated sim episodes scored against the bench lab filming
the same layout and motion; (4) policy: train on real, and on real + pseudo-real, evaluate both
in closed loop on the bench lab.
Each stage appends its section to `report.md`. This script is the only place that also reads
the bench lab's ground truth, to score the twin (and the neural simulator) against it.

    scripts/main_job.sh [--out output/main_job] [--episodes-per-task 5] [--tasks a b c]
"""
from __future__ import annotations

import argparse
import re
import sys
import time
from datetime import datetime
from pathlib import Path

import numpy as np
import rclpy

from comsim_core.ros.episode_runner import EpisodeRunner
from comsim_core.ros.graph import Graph, graph_from_launch
from comsim_teleop.report.recording import recording_section, success_table

ROOT = Path(__file__).resolve().parent.parent
CAMERAS = ['/cameras/front/image_raw', '/cameras/side/image_raw']


def wait_for_services(node, names: list[str], timeout: float, graph: Graph) -> None:
    deadline = time.monotonic() + timeout
    pending = list(names)
    while pending:
        graph.check_alive()
        if time.monotonic() > deadline:
            raise RuntimeError(f'services {pending} did not come up within {timeout:.0f} s')
        available = {n for n, _ in node.get_service_names_and_types()}
        pending = [n for n in pending if n not in available]
        rclpy.spin_once(node, timeout_sec=0.2)


def record_stage(out: Path, args) -> tuple[Path, str]:
    episodes = out / 'episodes'
    overrides = {'recorder': {'output_dir': str(episodes)}}
    specs = graph_from_launch(ROOT / 'launch' / 'record.launch.py', {'bench_lab': 'true'},
                              overrides)
    runner_args = ['--ros-args', '--params-file', str(ROOT / 'config' / 'episode_runner.yaml'),
                   '-p', f'episodes_per_task:={args.episodes_per_task}']
    if args.tasks:
        runner_args += ['-p', f'tasks:=[{",".join(args.tasks)}]']
    t0 = time.monotonic()
    with Graph(specs, log_dir=out / 'logs') as graph:
        rclpy.init(args=runner_args)
        try:
            runner = EpisodeRunner()
            wait_for_services(runner, ['/bench_lab/reset', '/recorder/start',
                                       '/teleop/start_scripted'], 120.0, graph)
            results = runner.run_all(lambda s: print(f'[record] {s}', flush=True))
            runner.destroy_node()
        finally:
            rclpy.shutdown()
    wall = time.monotonic() - t0
    ok = sum(r.success for r in results)
    print(f'[record] {ok}/{len(results)} successful episodes in {wall:.0f} s', flush=True)
    text = recording_section(episodes, out, CAMERAS)
    text = text.replace('## Recording\n', f'## Recording\n\nWall time {wall:.0f} s; '
                        f'{ok}/{len(results)} episodes successful.\n\n'
                        f'{success_table([(r.task, r.success) for r in results])}\n', 1)
    return episodes, text


def bench_truth_layout(lab, episode_dir: Path) -> dict:
    """The bench lab's true object poses at the start of a recorded episode (same seed)."""
    import yaml
    side = yaml.safe_load((episode_dir / 'episode.yaml').read_text())
    meta = side.get('metadata') or {}
    notes = dict(re.findall(r'(\w+)=(\S*)', str(meta.get('notes', ''))))
    lab.reset(meta['task'], int(notes['seed']), notes.get('region') or 'id',
              notes.get('variant') or None)
    return lab.task_state()['objects']


def twin_stage(out: Path, episodes_dir: Path, args) -> str:
    from comsim_bench_lab.calibration_rig import capture_calibration
    from comsim_bench_lab.config import LabConfig
    from comsim_bench_lab.lab import BenchLab
    from comsim_core.report.images import save_png
    from comsim_twin.calibration.extrinsics import pose_difference
    from comsim_twin.pipeline import run_twin_stage
    from comsim_twin.replay import side_by_side

    lab_yaml, realism = ROOT / 'config/bench_lab/lab.yaml', ROOT / 'config/bench_lab/realism.yaml'
    t0 = time.monotonic()
    bag = capture_calibration(lab_yaml, realism, out / 'calibration_session', args.calib_views,
                              seed=0)
    capture_s = time.monotonic() - t0
    episodes = sorted(p for p in episodes_dir.iterdir() if (p / 'metadata.yaml').exists())
    res = run_twin_stage(bag, episodes, out / 'twin', sim_per_task=args.sim_per_task,
                         log=lambda m: print(m, flush=True))
    lab = BenchLab(LabConfig.load(lab_yaml), None)
    lines = ['## Digital twin', '',
             f'Calibration capture {capture_s:.0f} s ({args.calib_views} board views per camera '
             f'+ table placements), calibration {res.seconds["calibration"]:.0f} s, alignment '
             f'{res.seconds["alignment"]:.0f} s, replay {res.seconds["replay"]:.0f} s, '
             f'generation {res.seconds["generation"]:.0f} s. Errors are against the bench '
             "lab's hidden ground truth, which the twin never reads.", '',
             '### Calibration', '',
             '| camera | views used / rejected | mean reprojection (px) | fx, fy error (px) | '
             'cx, cy error (px) | extrinsic error (mm) | (deg) |', '|---|---|---|---|---|---|---|']
    for cam, rep in res.calibration.items():
        truth, est = lab.camera_info(cam), res.cameras[cam]
        dt, da = pose_difference(np.asarray(truth.T_base_camera), est.T_base_camera)
        dK = np.asarray(est.K) - np.asarray(truth.K)
        intr = rep['intrinsics']
        lines.append(f'| {cam} | {len(intr["used_views"])} / {len(intr["rejected_views"])} | '
                     f'{intr["mean_error_px"]:.3f} | {dK[0, 0]:+.2f}, {dK[1, 1]:+.2f} | '
                     f'{dK[0, 2]:+.2f}, {dK[1, 2]:+.2f} | {dt * 1000:.2f} | {da:.3f} |')
    lines += ['', 'Targets: < 0.5 px, < 5 mm, < 0.5°.', '', '### Alignment', '',
              '| episode | object | position error (mm) | yaw error (deg) | IoU | colour (twin) |',
              '|---|---|---|---|---|---|']
    errors = []
    for name, rep in res.alignment.items():
        truth = bench_truth_layout(lab, episodes_dir / name)
        for obj, o in rep['objects'].items():
            if obj not in truth:
                lines.append(f'| {name} | {obj} | (not in the bench layout) | | | |')
                continue
            err = float(np.linalg.norm(np.asarray(o['position'][:2])
                                       - np.asarray(truth[obj]['pos'][:2])))
            q = truth[obj]['quat']
            yaw_true = np.degrees(np.arctan2(2 * (q[0] * q[3] + q[1] * q[2]),
                                             1 - 2 * (q[2] ** 2 + q[3] ** 2)))
            dyaw = (np.degrees(o['yaw']) - yaw_true + 45) % 90 - 45  # symmetric shapes
            yaw = '–' if truth[obj].get('shape') in ('cylinder', 'bottle') else f'{dyaw:+.1f}'
            errors.append(err)
            rgb = ', '.join(f'{c:.2f}' for c in o['colour'])
            lines.append(f'| {name} | {obj} | {err * 1000:.1f} | {yaw} | '
                         f'{o["iou"]:.2f} | {rgb} |')
    if errors:
        lines += ['', f'Position error over {len(errors)} objects: mean '
                  f'{np.mean(errors) * 1000:.1f} mm, max {np.max(errors) * 1000:.1f} mm '
                  f'(target < 10 mm; box yaw modulo 90°, round objects have none).']
    lab.close()
    lines += ['', '### Replay: real vs twin (same states)', '',
              '| episode | frames | PSNR mean (dB) | PSNR min | SSIM mean | SSIM min |',
              '|---|---|---|---|---|---|']
    for name, gap in res.gaps.items():
        cams = list(gap['cameras'].values())
        lines.append(f'| {name} | {sum(c["frames"] for c in cams)} | {gap["psnr_mean"]:.2f} | '
                     f'{min(c["psnr_min"] for c in cams):.2f} | {gap["ssim_mean"]:.3f} | '
                     f'{min(c["ssim_min"] for c in cams):.3f} |')
    shown = set()
    for name, paired in res.paired.items():
        task = name.split('_', 2)[-1]
        if task in shown:
            continue
        shown.add(task)
        png = save_png(out / 'pictures' / f'twin_{name}.png', side_by_side(paired, 3))
        lines += ['', f'**{name}**: real | twin | difference', '',
                  f'![{name}]({png.relative_to(out)})']
    lines += ['', '### Rule-based generation', '', '| task | made | successful | wall (s) |',
              '|---|---|---|---|']
    for task, g in res.generation.items():
        lines.append(f'| {task} | {g["made"]} | {g["successes"]} | {g["wall_s"]:.0f} |')
    return '\n'.join(lines)


def bench_ground_truth(sims: list[Path], out_dir: Path, cameras: list[str],
                       max_frames: int) -> Path:
    """The bench lab films generated episodes (ground truth for the neural simulator's output)."""
    from comsim_bench_lab.ground_truth import GroundTruthRenderer
    with GroundTruthRenderer(ROOT / 'config/bench_lab/lab.yaml',
                             ROOT / 'config/bench_lab/realism.yaml') as renderer:
        for sim in sims:
            renderer.render(sim, out_dir, cameras, max_frames)
    return out_dir


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--out', type=Path, default=ROOT / 'output' / 'main_job')
    parser.add_argument('--episodes-per-task', type=int, default=5)
    parser.add_argument('--tasks', nargs='*')
    parser.add_argument('--calib-views', type=int, default=20)
    parser.add_argument('--sim-per-task', type=int, default=4)
    parser.add_argument('--neural-sim-steps', type=int, default=400,
                        help='training steps of the neural simulator (default: its config)')
    parser.add_argument('--neural-sim-sample-steps', type=int, default=4,
                        help='DDIM steps per translated window (bench/neural_sim_quality.py: '
                             '4 steps score as well as 10 for the x0-predicting CPU model)')
    parser.add_argument('--ground-truth-episodes', type=int, default=3,
                        help='translated sim episodes scored against bench-lab ground truth '
                             '(one per task in turn; 0: none)')
    parser.add_argument('--rollouts-per-task', type=int, default=1)
    parser.add_argument('--skip-neural-sim', action='store_true')
    parser.add_argument('--skip-policy', action='store_true')
    parser.add_argument('--reuse-episodes', type=Path,
                        help='skip recording and use these recorded episodes (for development)')
    args = parser.parse_args(argv)
    out = args.out / datetime.now().strftime('%Y%m%d-%H%M%S')
    out.mkdir(parents=True)
    latest = args.out / 'latest'
    if latest.is_symlink() or latest.exists():
        latest.unlink()
    latest.symlink_to(out.name)
    t0 = time.monotonic()
    sections = ['# ComSim main job report', '',
                f'Run {out.name} on {sys.platform}, Python {sys.version.split()[0]}.', '']
    if args.reuse_episodes:
        episodes = args.reuse_episodes.resolve()
        sections.append(f'## Recording\n\nReused the episodes in `{episodes}`.')
    else:
        episodes, text = record_stage(out, args)
        sections.append(text)
    _write(out, sections)
    sections.append(twin_stage(out, episodes, args))
    _write(out, sections)
    pseudo_real = None
    if not args.skip_neural_sim:
        from comsim_neural_sim.pipeline import neural_sim_stage
        t1 = time.monotonic()
        text, pseudo_real = neural_sim_stage(out / 'neural_sim', out / 'twin' / 'paired',
                                             out / 'twin' / 'sim',
                                             log=lambda m: print(f'[neural_sim] {m}', flush=True),
                                             train_steps=args.neural_sim_steps,
                                             steps=args.neural_sim_sample_steps,
                                             ground_truth=bench_ground_truth,
                                             ground_truth_episodes=args.ground_truth_episodes)
        sections.append(_relink(text, out / 'neural_sim', out)
                        + f'\n\nStage wall time {time.monotonic() - t1:.0f} s.')
        _write(out, sections)
    if not args.skip_policy:
        from comsim_policy.pipeline import policy_stage
        text = policy_stage(out / 'policy_stage', episodes, pseudo_real,
                            log=lambda m: print(f'[policy] {m}', flush=True),
                            rollouts_per_task=args.rollouts_per_task)
        sections.append(_relink(text, out / 'policy_stage', out))
        _write(out, sections)
    sections += ['', f'Total wall time: {time.monotonic() - t0:.0f} s.', '']
    print(f'report: {_write(out, sections)}')
    return 0


def _relink(markdown: str, stage_dir: Path, out: Path) -> str:
    """Picture links of a stage's section, made relative to the report's folder."""
    prefix = stage_dir.relative_to(out).as_posix()
    return re.sub(r'\]\((?!https?:|/)([^)]+)\)', lambda m: f']({prefix}/{m.group(1)})', markdown)


def _write(out: Path, sections: list[str]) -> Path:
    """The report so far (rewritten after each stage, so a failed stage keeps the others)."""
    report = out / 'report.md'
    report.write_text('\n'.join(sections) + '\n')
    return report


if __name__ == '__main__':
    sys.exit(main())
