"""The main job: the whole pipeline that exists so far, on the bench lab, with a report.

Stages: (1) record: start the recording graph (bench lab, scripted teleop, recorder), record N
episodes per task unattended; (2) twin: the lab captures calibration views, the twin calibrates,
aligns each recorded episode, replays it into a paired episode and generates sim episodes;
(3) neural simulator: train on the paired episodes, translate the sim episodes into pseudo-real
ones, ablation table, and a few translated sim episodes scored against the bench lab filming
the same layout and motion; (4) policy: train on real, and on real + pseudo-real, evaluate both
in closed loop on the bench lab.
Each stage returns its result and scripts/report.py renders it into `report.md`. This script is
the only place that also reads the bench lab's ground truth, to score the twin
(comsim_bench_lab.scoring) and the neural simulator against it.

    scripts/main_job.sh [--out output/main_job] [--episodes-per-task 5] [--tasks a b c]
"""
from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime
from pathlib import Path

import rclpy
import report

from comsim_core.episodes import find_episodes
from comsim_core.ros.episode_runner import EpisodeRunner
from comsim_core.ros.graph import Graph, graph_from_launch
from comsim_teleop.report.recording import summarise_recording

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
    text = report.recording_section(summarise_recording(episodes), out, CAMERAS,
                                    [(r.task, r.success) for r in results], wall)
    return episodes, text


def twin_stage(out: Path, episodes_dir: Path, args) -> str:
    from comsim_bench_lab.calibration_rig import capture_calibration
    from comsim_bench_lab.config import LabConfig
    from comsim_bench_lab.scoring import score_twin
    from comsim_twin.stage import run_twin_stage

    lab_yaml, realism = ROOT / 'config/bench_lab/lab.yaml', ROOT / 'config/bench_lab/realism.yaml'
    t0 = time.monotonic()
    bag = capture_calibration(lab_yaml, realism, out / 'calibration_session', args.calib_views,
                              seed=0)
    capture_s = time.monotonic() - t0
    episodes = find_episodes(episodes_dir)
    res = run_twin_stage(bag, episodes, out / 'twin', sim_per_task=args.sim_per_task,
                         log=lambda m: print(m, flush=True))
    scores = score_twin(LabConfig.load(lab_yaml),
                        {cam: (res.cameras[cam].K, res.cameras[cam].T_base_camera)
                         for cam in res.calibration},
                        {name: (episodes_dir / name, rep['objects'])
                         for name, rep in res.alignment.items()})
    return report.twin_section(res, scores, out, capture_s, args.calib_views)


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
    parser.add_argument('--rollouts', type=int, default=20,
                        help='closed-loop rollouts per checkpoint, task and region (in process)')
    parser.add_argument('--regions', nargs='+', default=['id', 'ood'],
                        help='layout regions the policies are evaluated on')
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
        sections.append(report.reused_recording_section(episodes))
    else:
        episodes, text = record_stage(out, args)
        sections.append(text)
    _write(out, sections)
    sections.append(twin_stage(out, episodes, args))
    _write(out, sections)
    pseudo_real = None
    if not args.skip_neural_sim:
        from comsim_neural_sim.stage import neural_sim_stage
        t1 = time.monotonic()
        ns = neural_sim_stage(out / 'neural_sim', out / 'twin' / 'paired', out / 'twin' / 'sim',
                              log=lambda m: print(f'[neural_sim] {m}', flush=True),
                              train_steps=args.neural_sim_steps,
                              steps=args.neural_sim_sample_steps,
                              ground_truth=bench_ground_truth,
                              ground_truth_episodes=args.ground_truth_episodes)
        pseudo_real = ns.pseudo_real
        sections.append(report.neural_sim_section(ns, out, time.monotonic() - t1))
        _write(out, sections)
    if not args.skip_policy:
        from comsim_policy.stage import policy_stage
        pol = policy_stage(out / 'policy_stage', episodes, pseudo_real,
                           log=lambda m: print(f'[policy] {m}', flush=True),
                           rollouts=args.rollouts, regions=args.regions)
        sections.append(report.policy_section(pol, out))
        _write(out, sections)
    sections += ['', f'Total wall time: {time.monotonic() - t0:.0f} s.', '']
    print(f'report: {_write(out, sections)}')
    return 0


def _write(out: Path, sections: list[str]) -> Path:
    """The report so far (rewritten after each stage, so a failed stage keeps the others)."""
    report = out / 'report.md'
    report.write_text('\n'.join(sections) + '\n')
    return report


if __name__ == '__main__':
    sys.exit(main())
