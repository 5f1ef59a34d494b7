"""User mistakes get one clear line and exit code 2; tracebacks only on request.

A lab runs these tools on its own files: a misspelt key, a truncated bag or a full disk is the
user's to fix, and fifty lines of traceback hide the one line that says how. Code raises
`UserError` (or a subclass) naming the file, the key and what was expected; `cli_main` turns it
into that one line. `--debug` on the command line or `COMSIM_DEBUG=1` re-raises instead.
Anything else is a bug in ComSim and keeps its traceback.
"""
from __future__ import annotations

import dataclasses
import errno
import functools
import os
import sys
import types
import typing
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


_TYPE_NAMES = {bool: 'true or false', int: 'an integer', float: 'a number', str: 'a string',
               list: 'a list', tuple: 'a list', dict: 'a mapping'}


def _accepts(hint, value) -> bool:
    origin = typing.get_origin(hint) or hint
    if origin in (typing.Union, types.UnionType):
        return any(_accepts(h, value) for h in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if origin is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if origin is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin in (list, tuple):
        return isinstance(value, (list, tuple))
    if isinstance(origin, type) and origin in _TYPE_NAMES:
        return isinstance(value, origin)
    return True  # nested dataclasses, Any, Literal...: their own loader checks them


def _expected(hint) -> str:
    args = [h for h in typing.get_args(hint) if h is not type(None)]
    if (typing.get_origin(hint) in (typing.Union, types.UnionType)):
        names = ' or '.join(_expected(h) for h in args)
        return names + (' or null' if len(args) < len(typing.get_args(hint)) else '')
    return _TYPE_NAMES.get(typing.get_origin(hint) or hint, getattr(hint, '__name__', str(hint)))


def check_fields(cls: type, data: dict, where: str, error: type[Exception] = UserError) -> None:
    """Refuse keys `cls` (a dataclass) does not have and values unlike its annotations.

    `where` names the file (and section) for the message: `policy.yaml: train.lr: expected a
    number, got 'fast'`.
    """
    if not isinstance(data, dict):
        raise error(f'{where}: expected a mapping, got {type(data).__name__}')
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(data) - set(names), key=str)
    if unknown:
        raise error(f'{where}: unknown key(s) {", ".join(map(str, unknown))}; '
                    f'known: {", ".join(names)}')
    for key, value in data.items():
        if not _accepts(hints[key], value):
            raise error(f'{where}: {key}: expected {_expected(hints[key])}, got {value!r}'
                        f'{_number_hint(value)}')


def _number_hint(value) -> str:
    """YAML 1.1 reads `3e-4` as text; say how to write it as a number."""
    if isinstance(value, str):
        try:
            float(value)
        except ValueError:
            return ''
        return f' (YAML reads it as text: write {float(value)!r})'
    return ''


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
