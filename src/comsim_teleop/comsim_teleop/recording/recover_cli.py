"""``comsim-recover``: make killed episodes readable again.

    comsim-recover EPISODE_DIR        # one episode
    comsim-recover --all FOLDER       # every unreadable episode directly under FOLDER
    comsim-recover --confirm-success NAME EPISODE_DIR   # a person vouches for a recovered one

A recovered (or failed) episode does not count as a successful demonstration for training until
a person checked it and confirms it with ``--confirm-success``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from comsim_core.episodes.sidecar import confirm_success
from comsim_core.errors import UserError, cli_main

from .recover import RecoveryReport, is_readable, recover_episode


def _candidates(folder: Path) -> list[Path]:
    """Sub-directories that hold a bag file but cannot be opened."""
    out = []
    for d in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith('.')):
        if any(d.glob('*.mcap')) or any(d.glob('*.db3')):
            if not is_readable(d):
                out.append(d)
    return out


def _describe(target: Path, report: RecoveryReport) -> str:
    if report.status == 'readable':
        return f'{target}: already readable, nothing to do (use --force to rebuild)'
    counts = ', '.join(f'{k}: {v}' for k, v in sorted(report.messages.items()))
    original = report.original.name if report.original else '?'
    others = [p.name for p in report.backups if p != report.original]
    partial = (f', {report.from_unfinished_chunk} of them from the unfinished last chunk'
               if report.from_unfinished_chunk else '')
    line = (f'{target}: recovered {report.total} messages ({counts or "none"}{partial}); '
            f'original kept as {original}' + (f' (also {", ".join(others)})' if others else ''))
    if report.stopped_reason:
        line += f'; stopped at: {report.stopped_reason}'
    if report.damaged:
        line += f'; skipped damaged data: {"; ".join(report.damaged)}'
    return line + '; not counted as a success until confirmed (--confirm-success NAME)'


@cli_main('comsim-recover')
def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit code (0 ok, 1 some of --all failed, 2 error)."""
    parser = argparse.ArgumentParser(prog='comsim-recover', description=__doc__.split('\n')[1])
    parser.add_argument('path', type=Path, help='episode directory, or folder with --all')
    parser.add_argument('--all', action='store_true',
                        help='recover every unreadable episode under PATH')
    parser.add_argument('--force', action='store_true', help='rebuild even if readable')
    parser.add_argument('--confirm-success', metavar='NAME',
                        help='record that NAME checked this episode and it is a success')
    args = parser.parse_args(argv)
    if not args.path.is_dir():
        raise UserError(f'{args.path} is not a directory')
    if args.confirm_success is not None:
        confirm_success(args.path, args.confirm_success)
        print(f'{args.path}: success confirmed by {args.confirm_success.strip()}')
        return 0
    if not args.all:
        print(_describe(args.path, recover_episode(args.path, force=args.force)))
        return 0
    targets = _candidates(args.path)
    if not targets:
        print(f'nothing to recover under {args.path}')
    failed = 0
    for target in targets:
        try:
            print(_describe(target, recover_episode(target, force=args.force)))
        except (UserError, OSError) as exc:
            print(f'FAILED {target}: {exc}', file=sys.stderr)
            failed += 1
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
