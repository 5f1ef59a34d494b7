"""Batch replay: recorded episodes -> paired episodes, with the real-to-twin gap per episode.

    python -m comsim_twin.replay.cli output/episodes/episode_* --scene twin_scene.yaml \\
        --out output/paired [--mode kinematic|dynamic] [--backend mujoco]

Resumable: an episode whose paired output is complete is skipped; an interrupted one (hidden
``.partial`` directory) is replayed again. One failing episode does not stop the batch; the exit
status is 1 when any failed.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from comsim_teleop.episodes import EpisodeError
from comsim_teleop.recording.sidecar import update_sidecar
from comsim_twin.backends import BACKENDS, make_backend
from comsim_twin.replay.gap import gap_report
from comsim_twin.replay.paired import is_complete
from comsim_twin.replay.replay import MODES, ReplayError, paired_path, replay_episode
from comsim_twin.scene import SceneError, TwinScene


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog='comsim-twin-replay', description=__doc__.split('\n')[0])
    ap.add_argument('bags', nargs='+', type=Path, help='recorded episode directories')
    ap.add_argument('--scene', required=True, type=Path, help='twin scene YAML')
    ap.add_argument('--out', required=True, type=Path, help='directory for paired episodes')
    ap.add_argument('--mode', choices=MODES, default='kinematic')
    ap.add_argument('--backend', choices=BACKENDS, default='mujoco')
    ap.add_argument('--no-gap', action='store_true', help='skip the PSNR/SSIM gap report')
    return ap.parse_args(argv)


def _gap_line(report: dict) -> str:
    cams = ', '.join(f'{c} PSNR {v["psnr_mean"]:.2f} dB (min {v["psnr_min"]:.2f}) '
                     f'SSIM {v["ssim_mean"]:.3f} (min {v["ssim_min"]:.3f})'
                     for c, v in report['cameras'].items())
    return f'gap: {cams}'


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        scene = TwinScene.load(args.scene)
    except SceneError as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 2
    backend = None
    failed = 0
    total = len(args.bags)
    try:
        for i, bag in enumerate(args.bags, 1):
            out = paired_path(args.out, bag, args.mode)
            tag = f'[{i}/{total}] {bag}'
            if is_complete(out):
                print(f'{tag}: done already -> {out} (skipped)', flush=True)
                continue
            t0 = time.perf_counter()
            try:
                if backend is None:
                    backend = make_backend(args.backend)
                path = replay_episode(bag, scene, backend, args.mode, args.out,
                                      scene_file=args.scene)
            except (ReplayError, EpisodeError, FileExistsError) as exc:
                failed += 1
                print(f'{tag}: FAILED: {exc}', file=sys.stderr, flush=True)
                continue
            line = f'{tag}: {args.mode} replay -> {path} ({time.perf_counter() - t0:.1f} s)'
            if not args.no_gap:
                report = gap_report(path)
                update_sidecar(path, gap=report['cameras'])
                line += f'; {_gap_line(report)}'
            print(line, flush=True)
    finally:
        if backend is not None:
            backend.close()
    print(f'{total - failed}/{total} episodes paired in {args.out}', flush=True)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
