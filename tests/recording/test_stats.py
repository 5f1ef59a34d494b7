"""Pure stream statistics."""

from __future__ import annotations

import numpy as np
import pytest

from comsim_core.episodes.stats import find_gaps, rate_warnings, stream_stats, window_rate

MS = 1_000_000


def test_regular_stream_has_no_gaps() -> None:
    t = np.arange(0, 100) * 10 * MS
    s = stream_stats('/js', 'x/msg/Y', t, 100.0, dropped=3)
    assert s.count == 100 and s.first_ns == 0 and s.last_ns == 990 * MS
    assert s.rate_hz == pytest.approx(100.0)
    assert s.max_gap_s == pytest.approx(0.01)
    assert s.gaps == [] and s.missed_estimate == 0 and s.dropped == 3


def test_gaps_and_missed_estimate() -> None:
    t = np.concatenate([np.arange(10) * 10, 90 + 50 + np.arange(10) * 10]) * MS  # 50 ms hole
    gaps = find_gaps(t, 100.0)
    assert len(gaps) == 1
    assert gaps[0].after_ns == 90 * MS and gaps[0].gap_s == pytest.approx(0.05)
    assert gaps[0].missed == 4
    assert stream_stats('/js', 'x/msg/Y', t, 100.0).missed_estimate == 4
    assert find_gaps(t, None) == []
    assert find_gaps([0, 14 * MS], 100.0) == []  # 1.4x period is jitter, not a gap
    assert len(find_gaps([0, 16 * MS], 100.0)) == 1


def test_empty_and_single() -> None:
    s = stream_stats('/a', 'x/msg/Y', [], 30.0)
    assert s.count == 0 and s.rate_hz is None and s.first_ns is None
    s = stream_stats('/a', 'x/msg/Y', [5], 30.0)
    assert s.count == 1 and s.rate_hz is None and s.max_gap_s is None


def test_rate_warnings() -> None:
    now = 10_000 * MS
    good = list(range(now - 999 * MS, now + 1, 10 * MS))  # 100 in the last second
    slow = list(range(now - 999 * MS, now + 1, 20 * MS))  # 50
    assert window_rate(good, now) == pytest.approx(100.0)
    out = rate_warnings({'/a': good, '/b': slow}, {'/a': 100.0, '/b': 100.0, '/c': None}, now, 0)
    assert len(out) == 1 and out[0].startswith('/b: 50.0 Hz')
    assert rate_warnings({'/b': slow}, {'/b': 100.0}, now, now - 500 * MS) == []  # warming up
    out = rate_warnings({}, {'/a': 30.0}, now, 0)
    assert out == ['/a: 0.0 Hz over the last 1 s, expected 30 Hz']


def test_jitter_without_loss_is_not_counted_as_missed():
    """Late-then-early arrivals (bursts) make gaps but lose nothing."""
    from comsim_core.episodes.stats import stream_stats
    period = 2_000_000  # 500 Hz
    t = np.arange(1000) * period
    t[1::10] += int(1.2 * period)  # every 10th message arrives late, next one on time
    s = stream_stats('/js', 'x', np.sort(t), 500.0)
    assert s.gaps and s.missed_estimate == 0
    # Real losses still count: remove 30 messages in the middle.
    lossy = np.delete(np.arange(1000) * period, np.arange(400, 430))
    assert stream_stats('/js', 'x', lossy, 500.0).missed_estimate == 30
