"""Stream statistics from arrival timestamps: pure functions, so they are unit-testable.

A gap is a spacing larger than ``GAP_FACTOR`` × the expected period; each gap is estimated to hide
``round(gap / period) - 1`` messages the publisher sent (or should have sent) but we never got.
Queue drops are counted separately: they are messages we *did* receive but could not write.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

GAP_FACTOR = 1.5
RATE_WARN_FRACTION = 0.9
RATE_WINDOW_NS = 1_000_000_000


@dataclass(frozen=True)
class Gap:
    """A hole in a stream: starts after the message at ``after_ns`` and lasts ``gap_s``."""

    after_ns: int
    gap_s: float
    missed: int


@dataclass(frozen=True)
class StreamStats:
    """What one topic delivered during an episode."""

    topic: str
    msgtype: str
    count: int
    first_ns: int | None
    last_ns: int | None
    rate_hz: float | None
    expected_rate_hz: float | None
    max_gap_s: float | None
    gaps: list[Gap] = field(default_factory=list)
    missed_estimate: int = 0
    dropped: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for YAML."""
        data = asdict(self)
        data['gaps'] = [asdict(g) for g in self.gaps]
        return data


@dataclass(frozen=True)
class EpisodeSummary:
    """The outcome of one episode, also written into episode.yaml."""

    path: str
    status: str
    success: bool | None
    duration_s: float
    payload_bytes: int
    bag_bytes: int
    streams: dict[str, StreamStats]
    error: str | None = None

    @property
    def total_dropped(self) -> int:
        """Messages received but lost to a full queue, all topics."""
        return sum(s.dropped for s in self.streams.values())

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for YAML."""
        data = asdict(self)
        data['streams'] = {k: v.to_dict() for k, v in self.streams.items()}
        return data


def find_gaps(t_ns: Sequence[int] | np.ndarray, expected_rate_hz: float | None,
              factor: float = GAP_FACTOR) -> list[Gap]:
    """Spacings above ``factor`` × expected period, with the messages each likely hides."""
    t = np.asarray(t_ns, dtype=np.int64)
    if expected_rate_hz is None or t.size < 2:
        return []
    period_ns = 1e9 / expected_rate_hz
    dt = np.diff(t)
    idx = np.flatnonzero(dt > factor * period_ns)
    return [Gap(int(t[i]), float(dt[i]) / 1e9, max(0, round(dt[i] / period_ns) - 1)) for i in idx]


def stream_stats(topic: str, msgtype: str, t_ns: Sequence[int] | np.ndarray,
                 expected_rate_hz: float | None, dropped: int = 0) -> StreamStats:
    """Count, span, achieved rate, max gap and gaps of one stream's (sorted) arrival times."""
    t = np.sort(np.asarray(t_ns, dtype=np.int64))
    n = int(t.size)
    if n == 0:
        return StreamStats(topic, msgtype, 0, None, None, None, expected_rate_hz, None,
                           dropped=dropped)
    span = int(t[-1] - t[0])
    rate = (n - 1) / (span / 1e9) if n >= 2 and span > 0 else None
    max_gap = float(np.diff(t).max()) / 1e9 if n >= 2 else None
    gaps = find_gaps(t, expected_rate_hz)
    missed = sum(g.missed for g in gaps)
    if expected_rate_hz is not None:
        # Receive times jitter: a late message followed by a quick one is a "gap" that hides
        # nothing. The count deficit over the span bounds what can really be missing.
        missed = min(missed, max(0, round(span / 1e9 * expected_rate_hz) + 1 - n))
    return StreamStats(topic, msgtype, n, int(t[0]), int(t[-1]), rate, expected_rate_hz, max_gap,
                       gaps, missed, dropped)


def window_rate(t_ns: Iterable[int], now_ns: int, window_ns: int = RATE_WINDOW_NS) -> float:
    """Messages per second that arrived in ``(now - window, now]``."""
    count = sum(1 for t in t_ns if now_ns - window_ns < t <= now_ns)
    return count / (window_ns / 1e9)


def rate_warnings(recent: Mapping[str, Iterable[int]], expected: Mapping[str, float | None],
                  now_ns: int, started_ns: int, window_ns: int = RATE_WINDOW_NS,
                  fraction: float = RATE_WARN_FRACTION) -> list[str]:
    """One line per stream whose rate over the last window is under ``fraction`` × expected.

    Silent during the first window after ``started_ns`` (a stream cannot have a full window yet).
    """
    if now_ns - started_ns < window_ns:
        return []
    out = []
    for topic, rate_hz in expected.items():
        if rate_hz is None:
            continue
        got = window_rate(recent.get(topic, ()), now_ns, window_ns)
        if got < fraction * rate_hz:
            out.append(f'{topic}: {got:.1f} Hz over the last {window_ns / 1e9:g} s, '
                       f'expected {rate_hz:g} Hz')
    return out
