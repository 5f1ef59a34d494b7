"""What the recorder subscribes to: topic name, ROS type and the rate it should arrive at."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TopicSpec:
    """One recorded stream.

    ``expected_rate_hz`` drives gap detection and live rate warnings; ``None`` means the stream is
    event-like (e.g. commands) and is never flagged for being slow.
    """

    name: str
    msgtype: str
    expected_rate_hz: float | None = None

    def __post_init__(self) -> None:
        if not self.name.startswith('/'):
            raise ValueError(f'topic name must be absolute (start with "/"): {self.name!r}')
        if self.msgtype.count('/') != 2:
            raise ValueError(f'msgtype must look like "pkg/msg/Type": {self.msgtype!r}')
        if self.expected_rate_hz is not None and self.expected_rate_hz <= 0:
            raise ValueError(f'expected_rate_hz must be > 0 or None: {self.expected_rate_hz!r}')

    @property
    def expected_period_ns(self) -> int | None:
        """Nominal spacing between messages, if the stream is periodic."""
        return None if self.expected_rate_hz is None else round(1e9 / self.expected_rate_hz)


def _time(ns: int) -> dict[str, int]:
    return {'sec': int(ns) // 1_000_000_000, 'nsec': int(ns) % 1_000_000_000}


def qos_dict(profile: Any) -> dict[str, Any]:
    """One rosbag2 (metadata version 9) ``offered_qos_profiles`` entry from an rclpy QoSProfile.

    Same keys and spellings as ``ros2 bag record`` writes (policy names lower case, durations
    as sec/nsec), so ``ros2 bag play`` and rosbags read them back.
    """
    return {
        'history': profile.history.name.lower(),
        'depth': int(profile.depth),
        'reliability': profile.reliability.name.lower(),
        'durability': profile.durability.name.lower(),
        'deadline': _time(profile.deadline.nanoseconds),
        'lifespan': _time(profile.lifespan.nanoseconds),
        'liveliness': profile.liveliness.name.lower(),
        'liveliness_lease_duration': _time(profile.liveliness_lease_duration.nanoseconds),
        'avoid_ros_namespace_conventions': bool(profile.avoid_ros_namespace_conventions),
    }
