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
from pathlib import Path

EXIT_USAGE = 2
DEBUG_FLAG = '--debug'
DEBUG_ENV = 'COMSIM_DEBUG'


class UserError(Exception):
    """Bad input (file, key, value, missing data) the user can fix: one line, exit code 2."""


def load_yaml(path: str | os.PathLike, what: str = 'file'):
    """`yaml.safe_load` of a file; a missing file or a syntax error is a UserError naming it."""
    import yaml  # noqa: PLC0415 (errors.py stays importable without PyYAML)

    path = Path(path)
    try:
        text = path.read_text(encoding='utf8')
    except FileNotFoundError:
        raise UserError(f'{what} {path} not found') from None
    except IsADirectoryError:
        raise UserError(f'{what} {path} is a directory, expected a YAML file') from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, 'problem_mark', None)
        line = f':{mark.line + 1}:{mark.column + 1}' if mark is not None else ''
        problem = getattr(exc, 'problem', None) or str(exc).splitlines()[0]
        raise UserError(f'{path}{line}: YAML syntax error: {problem}') from None


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
    if f'(os error {errno.ENOSPC})' in str(exc):
        # a Rust writer's I/O error (safetensors), not an OSError: the same disk full
        return 'disk full: free space and rerun (finished work is kept)'
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
            saved = os.environ.get(DEBUG_ENV)
            if debug:  # for code past the argv (batch loops) and child processes
                os.environ[DEBUG_ENV] = '1'
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
            finally:
                if saved is None:
                    os.environ.pop(DEBUG_ENV, None)
                else:
                    os.environ[DEBUG_ENV] = saved
        return run
    return wrap
