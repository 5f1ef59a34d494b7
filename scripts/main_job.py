"""The main job: the whole pipeline that exists so far, on the bench lab, with a report.

Stages (issue 2): start the recording graph (bench lab, scripted teleop, recorder), record N
episodes per task unattended, stop the graph, write `report.md` with pictures. Later stages
(twin, neural simulator, policy) append their sections to the same report.

    scripts/main_job.sh [--out output/main_job] [--episodes-per-task 5] [--tasks a b c]
"""
from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime
from pathlib import Path

import rclpy

from comsim_teleop.graph import Graph, graph_from_launch
from comsim_teleop.nodes.episode_runner import EpisodeRunner
from comsim_teleop.report.recording import recording_section

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
                        f'{ok}/{len(results)} episodes successful.\n', 1)
    return episodes, text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--out', type=Path, default=ROOT / 'output' / 'main_job')
    parser.add_argument('--episodes-per-task', type=int, default=5)
    parser.add_argument('--tasks', nargs='*')
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
    _, text = record_stage(out, args)
    sections.append(text)
    sections += ['', f'Total wall time: {time.monotonic() - t0:.0f} s.', '']
    report = out / 'report.md'
    report.write_text('\n'.join(sections))
    print(f'report: {report}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
