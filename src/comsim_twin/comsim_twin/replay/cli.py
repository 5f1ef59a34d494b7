"""Batch replay: recorded episodes -> paired episodes, with the real-to-twin gap per episode.

    python -m comsim_twin.replay.cli output/episodes/episode_* --scene twin_scene.yaml \\
        --out output/paired [--mode kinematic|dynamic] [--backend mujoco]

Resumable: an episode whose paired output is complete is skipped; an interrupted one (hidden
``.partial`` directory) is replayed again. One failing episode (unreadable, wrong encoding, images
unlike the scene's cameras, a gap report that fails) does not stop the batch: it is reported,
``<out>/<name>.failed.yaml`` says why, output it left is moved to a hidden ``.<name>.failed``
(never counted as done) and the next run tries it again. The exit status is 1 when any failed.
"""
from __future__ import annotations

import argparse
import errno
import shutil
import sys
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path

import yaml

from comsim_core.episodes.paired import is_complete_paired
from comsim_core.episodes.sidecar import update_sidecar
from comsim_core.errors import cli_main, debug_requested, user_message
from comsim_twin.backends import BACKENDS, make_backend
from comsim_twin.replay.gap import gap_report
from comsim_twin.replay.replay import MODES, paired_path, replay_episode
from comsim_twin.scene import TwinScene


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog='comsim-twin-replay', description=__doc__.split('\n')[0])
    ap.add_argument('bags', nargs='+', type=Path, help='recorded episode directories')
    ap.add_argument('--scene', required=True, type=Path, help='twin scene YAML')
    ap.add_argument('--out', required=True, type=Path, help='directory for paired episodes')
    ap.add_argument('--mode', choices=MODES, default='kinematic')
    ap.add_argument('--backend', choices=BACKENDS, default='mujoco')
    ap.add_argument('--no-gap', action='store_true', help='skip the PSNR/SSIM gap report')
    ap.add_argument('--object-masks', action='store_true',
                    help="also write which object each render pixel shows "
                         "(/sim/cameras/<cam>/objects; a neural simulator's object_loss_weight "
                         'needs them)')
    return ap.parse_args(argv)


def _gap_line(report: dict) -> str:
    cams = ', '.join(f'{c} PSNR {v["psnr_mean"]:.2f} dB (min {v["psnr_min"]:.2f}) '
                     f'SSIM {v["ssim_mean"]:.3f} (min {v["ssim_min"]:.3f})'
                     for c, v in report['cameras'].items())
    return f'gap: {cams}'


@cli_main('comsim-twin-replay')
def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    scene = TwinScene.load(args.scene)
    backend = None
    failed: list[Path] = []
    total = len(args.bags)
    try:
        for i, bag in enumerate(args.bags, 1):
            out = paired_path(args.out, bag, args.mode)
            tag = f'[{i}/{total}] {bag}'
            if is_complete_paired(out):
                print(f'{tag}: done already -> {out} (skipped)', flush=True)
                continue
            t0 = time.perf_counter()
            try:
                if backend is None:
                    backend = make_backend(args.backend)
                line = _pair(bag, scene, backend, args, out)
            except Exception as exc:
                message = user_message(exc)
                if debug_requested() or _disk_full(exc):
                    raise
                if message is None:  # a bug, not the episode's fault: keep its traceback
                    traceback.print_exc()
                failed.append(bag)
                _mark_failed(out, bag, message or f'{type(exc).__name__}: {exc}')
                print(f'{tag}: FAILED: {message or f"{type(exc).__name__}: {exc}"} '
                      f'(see {_failed_note(out)})', file=sys.stderr, flush=True)
                continue
            print(f'{tag}: {line} ({time.perf_counter() - t0:.1f} s)', flush=True)
    finally:
        if backend is not None:
            backend.close()
    print(f'{total - len(failed)}/{total} episodes paired in {args.out}', flush=True)
    if failed:
        print(f'failed: {", ".join(map(str, failed))}', file=sys.stderr, flush=True)
    return 1 if failed else 0


def _pair(bag: Path, scene: TwinScene, backend, args: argparse.Namespace, out: Path) -> str:
    """Replay one episode (and its gap report); only a fully paired one keeps its final name."""
    path = replay_episode(bag, scene, backend, args.mode, args.out, scene_file=args.scene,
                          object_masks=args.object_masks)
    line = f'{args.mode} replay -> {path}'
    if not args.no_gap:
        try:
            report = gap_report(path)
            update_sidecar(path, gap=report['cameras'])
        except BaseException:
            aside = out.with_name(f'.{out.name}.failed')
            shutil.rmtree(aside, ignore_errors=True)
            path.rename(aside)   # kept for a look, never counted as done
            raise
        line += f'; {_gap_line(report)}'
    _failed_note(out).unlink(missing_ok=True)
    return line


def _failed_note(out: Path) -> Path:
    return out.with_name(f'{out.name}.failed.yaml')


def _mark_failed(out: Path, bag: Path, message: str) -> None:
    """Leave why an episode failed next to where its paired episode would be."""
    out.parent.mkdir(parents=True, exist_ok=True)
    _failed_note(out).write_text(yaml.safe_dump(
        {'source_episode': str(bag), 'status': 'failed', 'error': message,
         'at': datetime.now(timezone.utc).isoformat(timespec='seconds')}, sort_keys=False))


def _disk_full(exc: BaseException) -> bool:
    """A full disk fails every later episode too: stop the batch."""
    return isinstance(exc, OSError) and exc.errno == errno.ENOSPC

if __name__ == '__main__':
    sys.exit(main())
