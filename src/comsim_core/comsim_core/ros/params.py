"""Node parameters: declared once with defaults, typos in params files refused loudly.

rclpy ignores what it cannot use: a misspelt key, a value of the wrong type turned into an
exception deep in `declare_parameter`, and a params file whose node section is misspelt
(`recordr:`) is dropped whole, so the node runs on defaults the user never chose. Here the
`--params-file` files are read once more with `yaml.safe_load`, and every one of these mistakes
becomes a `ParameterConfigError` naming the file, the key and what was expected.
"""
from __future__ import annotations

import re
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import SimpleNamespace

from rclpy.node import Node

from comsim_core.config import value_type_name
from comsim_core.errors import UserError, load_yaml

# Parameters every rclpy node accepts without declaring them.
_BUILTIN = {'use_sim_time', 'start_type_description_service'}
_PARAMS_KEY = 'ros__parameters'


class ParameterConfigError(UserError, ValueError):
    """A parameter the node does not know, a value of the wrong type, a params file unusable."""


class ParamsFile:
    """One `--params-file`: its path and the parameters of each node section (`/ns/node`)."""

    def __init__(self, path: str):
        self.path = path
        doc = load_yaml(path, 'params file')
        if not isinstance(doc, dict):
            raise ParameterConfigError(
                f'{path}: a params file maps node names to ros__parameters, '
                f'found {type(doc).__name__}')
        self.sections: dict[str, dict] = {}
        self._walk(doc, '')

    def _walk(self, mapping: dict, prefix: str) -> None:
        for key, value in mapping.items():
            if key == _PARAMS_KEY:
                self.sections[prefix or '/'] = _flatten(value or {})
            elif isinstance(value, dict):
                name = str(key)
                self._walk(value, name if name.startswith('/') and not prefix
                           else f'{prefix}/{name}')

    def section_for(self, fqn: str) -> dict | None:
        """Merged parameters of every section that applies to node `fqn` (rcl's wildcards)."""
        found = None
        for pattern, params in self.sections.items():
            if _matches(pattern, fqn):
                found = {**(found or {}), **params}
        return found


def _flatten(params: dict, prefix: str = '') -> dict:
    out = {}
    for key, value in params.items():
        if isinstance(value, dict):
            out.update(_flatten(value, f'{prefix}{key}.'))
        else:
            out[f'{prefix}{key}'] = value
    return out


def _matches(pattern: str, fqn: str) -> bool:
    """rcl's node-name match (as rclcpp resolves it): `/*` is one name, `/**` any number."""
    pattern = pattern if pattern.startswith('/') else '/' + pattern
    regex = ''.join(r'(/[^/]+)*' if tok == '/**' else r'/[^/]+' if tok == '/*' else re.escape(tok)
                    for tok in re.split(r'(/\*\*|/\*)', pattern))
    return re.fullmatch(regex, fqn) is not None


def params_file_paths(argv: Sequence[str]) -> list[str]:
    """The `--params-file` arguments inside the `--ros-args` sections of `argv`."""
    paths, in_ros, it = [], False, iter(argv)
    for arg in it:
        if arg == '--ros-args':
            in_ros = True
        elif arg == '--':
            in_ros = False
        elif in_ros and arg == '--params-file':
            path = next(it, None)
            if path is None:
                raise ParameterConfigError('--params-file needs a file name')
            paths.append(path)
    return paths


_loaded: list[ParamsFile] | None = None   # set by `params_files_of` while a node runs


@contextmanager
def params_files_of(argv: Sequence[str]) -> Iterator[list[ParamsFile]]:
    """Read the params files of `argv` (the node's command line) once, before rclpy.init, and
    check every node declared while inside against them."""
    global _loaded
    _loaded = [ParamsFile(p) for p in params_file_paths(argv)]
    try:
        yield _loaded
    finally:
        _loaded = None


def _params_files() -> list[ParamsFile]:
    """Those of `params_files_of`, else this process's own (nodes started without run_node)."""
    return [ParamsFile(p) for p in params_file_paths(sys.argv)] if _loaded is None else _loaded


def declare_parameters(node: Node, defaults: dict) -> SimpleNamespace:
    """Declare `defaults` on `node` and return the effective values as attributes."""
    fqn = node.get_fully_qualified_name()
    key = node.get_name() if node.get_namespace() == '/' else fqn
    where: dict[str, str] = {}  # parameter -> the params file that set it
    for pf in _params_files():
        section = pf.section_for(fqn)
        if section is None:
            found = ', '.join(repr(s) for s in pf.sections) or 'none'
            raise ParameterConfigError(
                f'{pf.path}: no section for node {fqn!r} (sections found: {found}); '
                f'expected {key}: or /**: above ros__parameters')
        where.update(dict.fromkeys(section, pf.path))

    def source(name: str) -> str:
        return f'{where[name]}: ' if name in where else ''

    overrides = getattr(node, '_parameter_overrides', {})
    unknown = sorted(set(overrides) - set(defaults) - _BUILTIN
                     - {n for n in overrides if n.startswith('qos_overrides.')})
    if unknown:
        raise ParameterConfigError(
            f'{source(unknown[0])}node {node.get_name()!r}: unknown parameter(s) {unknown}; '
            f'known: {sorted(defaults)}')
    values = {}
    for name, default in defaults.items():
        try:
            values[name] = node.declare_parameter(name, default).value
        except Exception as exc:  # rclpy raises InvalidParameterTypeException et al.
            given = overrides.get(name)
            got = f'{given.value!r}' if given is not None else str(exc)
            raise ParameterConfigError(
                f'{source(name)}node {node.get_name()!r}: parameter {name!r} expects '
                f'{value_type_name(default)} (default {default!r}), got {got}') from exc
    return SimpleNamespace(**values)
