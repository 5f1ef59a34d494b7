"""User mistakes get one clear line and exit code 2; tracebacks only on request.

A lab runs these tools on its own files: a misspelt key, a truncated bag or a full disk is the
user's to fix, and fifty lines of traceback hide the one line that says how. Code raises
`UserError` (or a subclass) naming the file, the key and what was expected; `cli_main` turns it
into that one line. `--debug` on the command line or `COMSIM_DEBUG=1` re-raises instead.
Anything else is a bug in ComSim and keeps its traceback.
"""
from __future__ import annotations

import errno
import functools
import os
import sys
from collections.abc import Callable, Sequence

EXIT_USAGE = 2
DEBUG_FLAG = '--debug'
DEBUG_ENV = 'COMSIM_DEBUG'


class UserError(Exception):
    """Bad input (file, key, value, missing data) the user can fix: one line, exit code 2."""


def debug_requested(argv: Sequence[str] | None = None) -> bool:
    argv = sys.argv[1:] if argv is None else argv
    return DEBUG_FLAG in argv or os.environ.get(DEBUG_ENV, '') not in ('', '0')


def strip_debug(argv: Sequence[str] | None) -> list[str] | None:
    """argv without `--debug` (None stays None: sys.argv is cleaned in place instead)."""
    if argv is None:
        sys.argv[1:] = [a for a in sys.argv[1:] if a != DEBUG_FLAG]
        return None
    return [a for a in argv if a != DEBUG_FLAG]


def user_message(exc: BaseException) -> str | None:
    """The one line for an exception that is the user's to fix, else None (a bug)."""
    if isinstance(exc, UserError):
        return str(exc)
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        where = f' writing {exc.filename}' if exc.filename else ''
        return f'disk full{where}: free space and rerun (finished work is kept)'
    if isinstance(exc, (FileNotFoundError, IsADirectoryError, NotADirectoryError,
                        PermissionError)):
        return f'{exc.strerror or exc}: {exc.filename}' if exc.filename else str(exc)
    return None


def cli_main(prog: str) -> Callable:
    """Decorate a console script's `main(argv=None) -> int` with the one-line error policy."""
    def wrap(main: Callable[..., int | None]) -> Callable[..., int]:
        @functools.wraps(main)
        def run(argv: Sequence[str] | None = None) -> int:
            debug = debug_requested(argv)
            argv = strip_debug(argv)
            try:
                return int(main(argv) or 0)
            except KeyboardInterrupt:
                print(f'{prog}: interrupted', file=sys.stderr)
                return 130
            except Exception as exc:
                message = user_message(exc)
                if message is None or debug:
                    raise
                print(f'{prog}: error: {message}', file=sys.stderr, flush=True)
                return EXIT_USAGE
        return run
    return wrap
