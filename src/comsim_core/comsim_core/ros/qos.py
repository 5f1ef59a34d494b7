"""QoS overrides that work: ``qos_overrides.<topic>.subscription.<policy>`` in a params file.

ROS 2's standard way to change a subscription's QoS without code (rclcpp and rclpy alike) is a
parameter per policy, declared when the subscription is created with ``QoSOverridingOptions``;
only then does rclpy read it. ``subscribe`` creates every subscription that way, with history,
depth and reliability overridable (read-only afterwards, as in rclcpp), so a best-effort camera
driver is reached with

    policy:
      ros__parameters:
        qos_overrides:
          /cameras/front/image_raw:
            subscription:
              reliability: best_effort

(the topic fully resolved: namespace and remappings applied). A reliable subscription never
matches a best-effort publisher (the DDS rule), which is why this matters on a real lab.

``check_qos_overrides`` refuses, in one line naming the file and key, an override for a topic
the node does not subscribe to (a typo would otherwise leave the default silently) and a
value rclpy would only turn into a traceback.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.qos_overriding_options import QoSOverridingOptions

from comsim_core.ros.params import ParameterConfigError, _params_files

PREFIX = 'qos_overrides.'
# policy -> the values rclpy accepts (enum names, lower case), None for a non-negative integer
POLICIES: dict[str, tuple[str, ...] | None] = {
    'reliability': tuple(p.name.lower() for p in ReliabilityPolicy if p.name != 'UNKNOWN'),
    'history': tuple(p.name.lower() for p in HistoryPolicy if p.name != 'UNKNOWN'),
    'depth': None,
}


def _where(node: Node, name: str) -> str:
    """'FILE: ' for the params file that set ``name`` for this node, else ''."""
    found = ''
    for pf in _params_files():
        section = pf.section_for(node.get_fully_qualified_name()) or {}
        if name in section:
            found = f'{pf.path}: '
    return found


def _overrides(node: Node) -> dict[str, Any]:
    return {n: p.value for n, p in getattr(node, '_parameter_overrides', {}).items()
            if n.startswith(PREFIX)}


def check_qos_overrides(node: Node, topics: Iterable[str]) -> None:
    """Every ``qos_overrides.*`` given to ``node`` must name one of ``topics`` (its
    subscriptions; resolved here), ``subscription`` and a policy in ``POLICIES`` with a valid
    value; else a ``ParameterConfigError`` (one line, exit 2)."""
    resolved = sorted({node.resolve_topic_name(t) for t in topics})
    for name, value in sorted(_overrides(node).items()):
        rest = name[len(PREFIX):]
        topic, _, tail = rest.rpartition('.subscription.')
        problem = None
        if not topic or topic not in resolved:
            problem = (f'names no subscription of this node; its subscriptions: {resolved} '
                       f'(as qos_overrides.TOPIC.subscription.{{{",".join(POLICIES)}}})')
        elif tail not in POLICIES:
            problem = f'is no overridable policy; known: {sorted(POLICIES)}'
        elif POLICIES[tail] is not None and (not isinstance(value, str)
                                             or value.lower() not in POLICIES[tail]):
            problem = f'must be one of {list(POLICIES[tail])}, got {value!r}'
        elif POLICIES[tail] is None and (isinstance(value, bool) or not isinstance(value, int)
                                         or value < 0):
            problem = f'must be an integer >= 0, got {value!r}'
        if problem:
            raise ParameterConfigError(f'{_where(node, name)}node {node.get_name()!r}: '
                                       f'parameter {name!r} {problem}')


def subscribe(node: Node, msg_type: Any, topic: str, callback: Callable, qos: QoSProfile,
              **kwargs: Any):
    """``node.create_subscription`` with history, depth and reliability overridable by
    ``qos_overrides.<topic>.subscription.<policy>`` parameters; ``qos`` (copied, never changed:
    the stack's shared profiles stay as they are) gives the defaults."""
    return node.create_subscription(
        msg_type, topic, callback, copy_qos(qos),
        qos_overriding_options=QoSOverridingOptions.with_default_policies(), **kwargs)


def copy_qos(qos: QoSProfile) -> QoSProfile:
    """A copy (rclpy's overrides write into the profile they are given; deepcopy cannot
    pickle its durations)."""
    return QoSProfile(**{s.lstrip('_'): getattr(qos, s.lstrip('_'))
                         for s in QoSProfile.__slots__})


def reliability_name(policy: ReliabilityPolicy) -> str:
    return ReliabilityPolicy(policy).name.lower()


def unmatched_publishers(node: Node, subscription) -> list[str]:
    """Why publishers on ``subscription``'s topic cannot reach it: a reliable subscription and
    best-effort publishers (the DDS rule); one entry per such publisher's node."""
    if subscription.qos_profile.reliability != ReliabilityPolicy.RELIABLE:
        return []
    return [f'{i.node_namespace.rstrip("/")}/{i.node_name}'
            for i in node.get_publishers_info_by_topic(subscription.topic_name)
            if i.qos_profile.reliability == ReliabilityPolicy.BEST_EFFORT]


def best_effort_hint(node: Node, subscription) -> str:
    """'' or a sentence telling how to reach best-effort publishers on ``subscription``'s
    topic (for a start-up error that says no data came)."""
    who = unmatched_publishers(node, subscription)
    if not who:
        return ''
    return (f'{subscription.topic_name} has best-effort publishers {who} that a reliable '
            f'subscription never receives: set qos_overrides.{subscription.topic_name}.'
            f'subscription.reliability: best_effort')
