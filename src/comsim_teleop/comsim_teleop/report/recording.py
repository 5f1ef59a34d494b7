"""What the recorder's sidecars say about recorded episodes: per episode and per topic.

Numbers only; the main job's report (scripts/report.py) renders them with contact sheets.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from comsim_core.episodes.sidecar import read_sidecar


@dataclass(frozen=True)
class EpisodeRow:
    """One recorded episode; ``lowest_rate`` is the worst stream's achieved / expected rate."""

    path: Path
    task: str | None
    success: bool | None
    status: str | None
    duration_s: float
    size_mb: float
    drops: int
    lowest_rate: float | None


@dataclass(frozen=True)
class TopicRow:
    """One topic over every episode."""

    topic: str
    messages: int
    mean_rate_hz: float
    expected_rate_hz: float | None
    lowest_rate_hz: float
    queue_drops: int
    missed: int
    max_gap_s: float


@dataclass(frozen=True)
class RecordingSummary:
    episodes_dir: Path
    episodes: list[EpisodeRow]
    topics: list[TopicRow]


def load_sidecars(episodes_dir: Path) -> list[tuple[Path, dict]]:
    """(episode dir, episode.yaml) for every episode under `episodes_dir`, in name order."""
    out = []
    for d in sorted(Path(episodes_dir).iterdir()):
        side = read_sidecar(d) if d.is_dir() else None
        if side is not None:
            out.append((d, side))
    return out


def episode_row(path: Path, side: dict) -> EpisodeRow:
    summary = side.get('summary') or {}
    streams = summary.get('streams', {})
    drops = sum(s.get('dropped', 0) + s.get('missed_estimate', 0) for s in streams.values())
    ratios = [s['rate_hz'] / s['expected_rate_hz'] for s in streams.values()
              if s.get('rate_hz') and s.get('expected_rate_hz')]
    return EpisodeRow(path, (side.get('metadata') or {}).get('task'), side.get('success'),
                      side.get('status'), float(summary.get('duration_s', 0)),
                      summary.get('bag_bytes', 0) / 1e6, int(drops),
                      min(ratios) if ratios else None)


def topic_row(topic: str, items: list[dict]) -> TopicRow:
    """Rates of the episodes that measured one (NaN when none did); gaps default to none."""
    rates = [s['rate_hz'] for s in items if s.get('rate_hz')] or [float('nan')]
    gaps = [s['max_gap_s'] for s in items if s.get('max_gap_s') is not None] or [0.0]
    return TopicRow(topic, sum(s['count'] for s in items), float(np.mean(rates)),
                    items[0].get('expected_rate_hz') or None, float(min(rates)),
                    sum(s.get('dropped', 0) for s in items),
                    sum(s.get('missed_estimate', 0) for s in items), float(max(gaps)))


def summarise_recording(episodes_dir: Path) -> RecordingSummary:
    """Per-episode and per-topic numbers from every sidecar under ``episodes_dir``."""
    sidecars = load_sidecars(episodes_dir)
    per_topic: dict[str, list[dict]] = {}
    for _, side in sidecars:
        for topic, s in ((side.get('summary') or {}).get('streams', {})).items():
            per_topic.setdefault(topic, []).append(s)
    return RecordingSummary(Path(episodes_dir), [episode_row(p, s) for p, s in sidecars],
                            [topic_row(t, items) for t, items in per_topic.items()])
