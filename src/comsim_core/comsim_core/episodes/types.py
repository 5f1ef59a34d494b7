"""Plain data returned by the episode reader."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class StreamInfo:
    """One topic of an episode (times are log/receive times in ns)."""

    topic: str
    msgtype: str
    count: int
    start_ns: int | None
    end_ns: int | None

    @property
    def rate_hz(self) -> float | None:
        """Mean message rate over the stream's span."""
        if self.count < 2 or self.start_ns is None or self.end_ns is None:
            return None
        span = self.end_ns - self.start_ns
        return (self.count - 1) / (span / 1e9) if span > 0 else None


@dataclass(frozen=True)
class JointStates:
    """All joint states of a topic; missing velocity/effort entries are NaN."""

    t_ns: np.ndarray  # (N,) int64, header stamps (log time where the stamp is zero)
    names: list[str]
    position: np.ndarray  # (N, J)
    velocity: np.ndarray  # (N, J)
    effort: np.ndarray  # (N, J)


@dataclass(frozen=True)
class Commands:
    """Commanded joint targets in time order, with the times they take effect."""

    t_ns: np.ndarray  # (M,) int64
    position: np.ndarray  # (M, J)
    names: list[str] | None  # None for Float64MultiArray (architecture joint order)
    msgtype: str


@dataclass(frozen=True)
class Frame:
    """One aligned sample: the first camera's image time and what was true then."""

    t_ns: int
    images: dict[str, np.ndarray]
    joint_position: np.ndarray  # (J,)
    command: np.ndarray | None  # (J,) target in force at t_ns, None if none yet/not asked
    image_t_ns: dict[str, int] = field(default_factory=dict)
