"""``comsim-recover``: make killed episodes readable again.

    comsim-recover EPISODE_DIR        # one episode
    comsim-recover --all FOLDER       # every unreadable episode directly under FOLDER
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .errors import RecoveryError
from .recover import is_readable, recover_episode


def _candidates(folder: Path) -> list[Path]:
    """Sub-directories that hold a bag file but cannot be opened."""
    out = []
    for d in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith('.')):
        if any(d.glob('*.mcap')) or any(d.glob('*.db3')):
            if not is_readable(d):
                out.append(d)
    return out


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit code (0 ok, 1 some failed, 2 usage)."""
    parser = argparse.ArgumentParser(prog='comsim-recover', description=__doc__.split('\n')[1])
    parser.add_argument('path', type=Path, help='episode directory, or folder with --all')
    parser.add_argument('--all', action='store_true',
                        help='recover every unreadable episode under PATH')
    parser.add_argument('--force', action='store_true', help='rebuild even if readable')
    args = parser.parse_args(argv)
    if not args.path.is_dir():
        print(f'comsim-recover: {args.path} is not a directory', file=sys.stderr)
        return 2
    targets = _candidates(args.path) if args.all else [args.path]
    if args.all and not targets:
        print(f'nothing to recover under {args.path}')
    failed = 0
    for target in targets:
        try:
            report = recover_episode(target, force=args.force)
        except (RecoveryError, OSError) as exc:
            print(f'FAILED {target}: {exc}', file=sys.stderr)
            failed += 1
            continue
        if report.status == 'readable':
            print(f'{target}: already readable, nothing to do (use --force to rebuild)')
        else:
            counts = ', '.join(f'{k}: {v}' for k, v in sorted(report.messages.items()))
            print(f'{target}: recovered {report.total} messages ({counts or "none"}); '
                  f'original kept as {report.original.name if report.original else "?"}'
                  + (f'; stopped at: {report.stopped_reason}' if report.stopped_reason else ''))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
