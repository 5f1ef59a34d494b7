"""Node parameters: declared once with defaults, typos in params files refused loudly.

rclpy ignores what it cannot use: a misspelt key, a value of the wrong type turned into an
exception deep in `declare_parameter`, and a params file whose node section is misspelt
(`recordr:`) is dropped whole, so the node runs on defaults the user never chose. Here the
`--params-file` files are read once more with `yaml.safe_load`, and every one of these mistakes
becomes a `ParameterConfigError` naming the file, the key and what was expected.

Each parameter gets a descriptor (``Param``: description, range, choices). A parameter is
read-only unless the node says a change takes effect (``dynamic``): ``ros2 param set`` on a
read-only one is refused, not accepted and ignored, and a dynamic one is range-checked, written
into the node's parameter namespace and handed to the node's ``on_change`` callback.
"""
from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from rcl_interfaces.msg import (
    FloatingPointRange,
    IntegerRange,
    ParameterDescriptor,
    SetParametersResult,
)
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


@dataclass(frozen=True)
class Param:
    """A parameter's default and what ``ros2 param describe`` says of it."""

    default: Any
    description: str = ''
    range: tuple[float, float] | None = None      # inclusive
    choices: tuple[Any, ...] | None = None
    dynamic: bool = False                          # a change at run time takes effect

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is not allowed, or None."""
        if self.range is not None and not self.range[0] <= value <= self.range[1]:
            return f'must be in [{self.range[0]:g}, {self.range[1]:g}], got {value!r}'
        if self.choices is not None and value not in self.choices:
            return f'must be one of {list(self.choices)}, got {value!r}'
        return None

    def descriptor(self) -> ParameterDescriptor:
        d = ParameterDescriptor(description=self.description, read_only=not self.dynamic)
        if self.choices is not None:
            d.additional_constraints = f'one of {list(self.choices)}'
        if self.range is not None and isinstance(self.default, float):
            d.floating_point_range = [FloatingPointRange(from_value=float(self.range[0]),
                                                         to_value=float(self.range[1]))]
        elif self.range is not None and isinstance(self.default, int):
            d.integer_range = [IntegerRange(from_value=int(self.range[0]),
                                            to_value=int(self.range[1]), step=1)]
        return d


def param_spec(value: Any) -> Param:
    return value if isinstance(value, Param) else Param(value)


def declare_parameters(node: Node, defaults: Mapping[str, Any],
                       on_change: Callable[[str, Any], None] | None = None) -> SimpleNamespace:
    """Declare `defaults` (plain defaults or ``Param``s) on `node` and return the effective
    values as attributes; later sets of dynamic parameters update them and call
    ``on_change(name, value)``."""
    specs = {name: param_spec(d) for name, d in defaults.items()}
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
    for name, spec in specs.items():
        default = spec.default
        given = overrides.get(name)
        if given is not None and type(given.value) is type(default) \
                and (why := spec.problem(given.value)):
            raise ParameterConfigError(f'{source(name)}node {node.get_name()!r}: parameter '
                                       f'{name!r} {why}')
        try:
            values[name] = node.declare_parameter(name, default, spec.descriptor()).value
        except Exception as exc:  # rclpy raises InvalidParameterTypeException et al.
            got = f'{given.value!r}' if given is not None else str(exc)
            raise ParameterConfigError(
                f'{source(name)}node {node.get_name()!r}: parameter {name!r} expects '
                f'{value_type_name(default)} (default {default!r}), got {got}') from exc
    namespace = SimpleNamespace(**values)

    def check(params) -> SetParametersResult:
        for p in params:
            spec = specs.get(p.name)
            if spec is not None and (why := spec.problem(p.value)):
                return SetParametersResult(successful=False, reason=f'{p.name} {why}')
        return SetParametersResult(successful=True)

    def apply(params) -> None:
        for p in params:
            if p.name in specs:
                setattr(namespace, p.name, p.value)
                if on_change is not None:
                    on_change(p.name, p.value)

    node.add_on_set_parameters_callback(check)
    node.add_post_set_parameters_callback(apply)
    return namespace
