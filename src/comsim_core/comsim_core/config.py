"""One strict loader from a YAML file (or a mapping) to typed, nested dataclasses.

Every config of ComSim is a dataclass; its annotations are the schema. A misspelt key, a missing
one or a value of the wrong type must fail at load with one line naming the file, the key path
and what was expected (`config/policy_train.yaml: train.lr: expected a number, got 'abc'`),
not run on defaults the user never chose or fail deep inside training. Range and cross-field
checks stay in each dataclass's `__post_init__`; a `UserError` raised there gets the same file
and key path in front.
"""
from __future__ import annotations

import dataclasses
import enum
import os
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from comsim_core.errors import UserError, load_yaml

T = TypeVar('T')

# What a value of each type is called in a message: the one map of ComSim's error lines.
TYPE_NAMES: dict[type, str] = {bool: 'true or false', int: 'an integer', float: 'a number',
                               str: 'a string', list: 'a list', tuple: 'a list',
                               dict: 'a mapping', type(None): 'null'}
_PLURALS: dict[type, str] = {bool: 'true or false values', int: 'integers', float: 'numbers',
                             str: 'strings'}


class ConfigError(UserError, ValueError):
    """A config that does not fit its dataclass: unknown, missing or mistyped key."""


def field_error(error: type[UserError], key: str, message: str) -> UserError:
    """An error about field `key`, raised in a `__post_init__`: the loader puts the file and the
    key's full path in front (`lab.yaml: physics.timestep: must be <= 0.002, got 0.01`)."""
    exc = error(f'{key}: {message}')
    exc.key, exc.detail = key, message
    return exc


def value_type_name(value: object) -> str:
    """What a value is, as a message says it: `an integer` for 3."""
    return TYPE_NAMES.get(type(value), type(value).__name__)


def type_name(hint: Any) -> str:
    """What an annotation expects, as a message says it: `a list of 3 numbers`."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return ' or '.join(type_name(a) for a in args if a is not type(None)) + (
            ' or null' if type(None) in args else '')
    if origin is typing.Literal:
        return 'one of ' + ', '.join(repr(a) for a in args)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return 'one of ' + ', '.join(repr(m.value) for m in hint)
    if dataclasses.is_dataclass(hint):
        return 'a mapping'
    if origin in (list, tuple) and args:
        fixed = origin is tuple and args[-1] is not Ellipsis
        items = set(args) if fixed else {args[0]}
        count = f'{len(args)} ' if fixed else ''
        if len(items) == 1 and next(iter(items)) in _PLURALS:
            return f'a list of {count}{_PLURALS[next(iter(items))]}'
        return f'a list of {len(args)} values' if fixed else 'a list'
    if hint is Path:
        return 'a path (string)'
    return TYPE_NAMES.get(origin or hint, getattr(hint, '__name__', str(hint)))


def load_config(source: str | os.PathLike | Mapping | None, cls: type[T], *,
                name: str = '<dict>', where: str = '', what: str = 'config',
                section: str | None = None,
                error: type[UserError] = ConfigError,
                missing_error: type[UserError] | None = None) -> T:
    """`cls` built from the YAML file `source` (or a mapping named `name`), strictly.

    `where`: the key path of a mapping taken from a larger one, for the messages. `section`: a
    file holding only `section: {...}` is read as its content. `error` is the
    exception raised for a mistake (a subclass of UserError: exit 2), `missing_error` the one
    for a missing required key (default `error`). An empty file is an empty mapping.
    """
    if isinstance(source, (str, os.PathLike)):
        name, data = str(source), load_yaml(source, what)
    else:
        data = source
    data = {} if data is None else data
    path = where
    if section is not None and isinstance(data, Mapping) and set(data) == {section}:
        data, path = data[section] or {}, section
    return _Loader(name, error, missing_error or error).value(cls, data, path)


class _Loader:
    """One load: the file name and error classes every message needs."""

    def __init__(self, name: str, error: type[UserError], missing: type[UserError]):
        self.name, self.error, self.missing = name, error, missing

    def fail(self, path: str, message: str, error: type[UserError] | None = None) -> UserError:
        return (error or self.error)(f'{self.name}: {path}: {message}' if path
                                     else f'{self.name}: {message}')

    def value(self, hint: Any, value: Any, path: str) -> Any:
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        if hint is Any or hint is object:
            return value
        if origin in (typing.Union, types.UnionType):
            return self._union(hint, args, value, path)
        if origin is typing.Literal:
            if any(value == a and type(value) is type(a) for a in args):
                return value
            raise self._mismatch(hint, value, path)
        if isinstance(hint, type) and issubclass(hint, enum.Enum):
            for member in hint:
                if value == member.value or value == member.name:
                    return member
            raise self._mismatch(hint, value, path)
        if dataclasses.is_dataclass(hint):
            return self._dataclass(hint, value, path)
        if origin in (list, tuple) or hint in (list, tuple):
            return self._sequence(origin or hint, args, value, path)
        if origin is dict or hint is dict:
            return self._mapping(args, value, path)
        return self._scalar(hint, value, path)

    def _union(self, hint: Any, args: tuple, value: Any, path: str) -> Any:
        if value is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        if len(options) == 1 and _same_kind(options[0], value):
            return self.value(options[0], value, path)   # a mistake inside: its own message
        for arg in options:
            try:
                return self.value(arg, value, path)
            except UserError:
                continue
        raise self._mismatch(hint, value, path)

    def _scalar(self, hint: Any, value: Any, path: str) -> Any:
        if hint is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if hint is int and isinstance(value, int) and not isinstance(value, bool):
            return value
        if hint is Path and isinstance(value, str):
            return Path(value)
        if hint in (bool, str, type(None)) and type(value) is hint:
            return value
        if hint not in (bool, int, float, str, type(None), Path):
            raise TypeError(f'load_config cannot read {hint!r} ({path or "top level"})')
        raise self._mismatch(hint, value, path)

    def _sequence(self, origin: type, args: tuple, value: Any, path: str) -> Any:
        if not isinstance(value, (list, tuple)):
            raise self._mismatch(origin[args] if args else origin, value, path)
        if origin is tuple and args and args[-1] is not Ellipsis:
            if len(value) != len(args):
                raise self._mismatch(origin[args], value, path)
            hints = args
        else:
            hints = (args[0] if args else Any,) * len(value)
        items = [self.value(h, v, f'{path}[{i}]') for i, (h, v) in
                 enumerate(zip(hints, value, strict=True))]
        return tuple(items) if origin is tuple else items

    def _mapping(self, args: tuple, value: Any, path: str) -> dict:
        if not isinstance(value, Mapping):
            raise self._mismatch(dict, value, path)
        key_hint, item_hint = args or (Any, Any)
        return {self.value(key_hint, k, _join(path, str(k))):
                self.value(item_hint, v, _join(path, str(k))) for k, v in value.items()}

    def _dataclass(self, cls: type, value: Any, path: str) -> Any:
        if not isinstance(value, Mapping):
            raise self.fail(path, f'expected a mapping, got {value!r}')
        fields = [f for f in dataclasses.fields(cls) if f.init]
        names = [f.name for f in fields]
        unknown = [str(k) for k in value if k not in names]
        if unknown:
            raise self.fail(path, f'unknown key(s) {", ".join(unknown)}; '
                                  f'known: {", ".join(names)}')
        for f in fields:
            required = (f.default is dataclasses.MISSING
                        and f.default_factory is dataclasses.MISSING)
            if required and f.name not in value:
                raise self.fail(path, f'missing key {f.name!r}', self.missing)
        hints = typing.get_type_hints(cls)
        kwargs = {k: self.value(hints[k], v, _join(path, k)) for k, v in value.items()}
        try:
            return cls(**kwargs)
        except UserError as exc:  # a __post_init__ check: give it the file and key path
            if hasattr(exc, 'key'):
                path, message = _join(path, exc.key), exc.detail
            elif str(exc).startswith(self.name):
                raise
            else:
                message = str(exc)
            raise type(exc)(f'{self.name}: {path}: {message}' if path
                            else f'{self.name}: {message}') from None

    def _mismatch(self, hint: Any, value: Any, path: str) -> UserError:
        return self.fail(path, f'expected {type_name(hint)}, got {value!r}{_number_hint(value)}')


def _same_kind(hint: Any, value: Any) -> bool:
    """Whether `value` is the container `hint` asks for (its items still unchecked)."""
    origin = typing.get_origin(hint) or hint
    if dataclasses.is_dataclass(hint) or origin is dict:
        return isinstance(value, Mapping)
    return origin in (list, tuple) and isinstance(value, (list, tuple))


def _join(path: str, key: str) -> str:
    return f'{path}.{key}' if path else key


def _number_hint(value: object) -> str:
    """YAML 1.1 reads `3e-4` as text; say how to write it as a number."""
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return ''
        return f' (YAML reads it as text: write {number!r})'
    return ''
