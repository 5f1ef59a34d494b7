"""Node parameters: declared once with defaults, typos in params files refused loudly.

A misspelt key in `config/*.yaml` would otherwise be ignored by rclpy and the node would run
with a default the user never chose.
"""
from __future__ import annotations

from types import SimpleNamespace

from rclpy.node import Node

from comsim_teleop.errors import UserError

# Parameters every rclpy node accepts without declaring them.
_BUILTIN = {'use_sim_time', 'start_type_description_service'}


class ParameterConfigError(UserError, ValueError):
    """A parameter the node does not know, or a value of the wrong type."""


def declare_parameters(node: Node, defaults: dict) -> SimpleNamespace:
    """Declare `defaults` on `node` and return the effective values as attributes."""
    overrides = getattr(node, '_parameter_overrides', {})
    unknown = sorted(set(overrides) - set(defaults) - _BUILTIN
                     - {n for n in overrides if n.startswith('qos_overrides.')})
    if unknown:
        raise ParameterConfigError(
            f'node {node.get_name()!r}: unknown parameter(s) {unknown}; '
            f'known: {sorted(defaults)} (check the params file under config/)')
    values = {}
    for name, default in defaults.items():
        try:
            values[name] = node.declare_parameter(name, default).value
        except Exception as exc:  # rclpy raises InvalidParameterTypeException et al.
            raise ParameterConfigError(
                f'node {node.get_name()!r}: parameter {name!r}: {exc}') from exc
    return SimpleNamespace(**values)
