"""What the recorder subscribes to: topic name, ROS type and the rate it should arrive at."""

from __future__ import annotations

from dataclasses import dataclass


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
