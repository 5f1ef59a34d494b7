"""Closing an episode written without the recorder (generated, evaluation rollouts): per-stream
summary into the bag's custom data and the sidecar, then the partial directory moved into place,
so a directory under its final name is always a complete episode."""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from .layout import COMPLETE
from .sidecar import SIDECAR_FORMAT, dump_yaml, write_sidecar
from .stats import EpisodeSummary, stream_stats
from .topics import TopicSpec
from .writer import EpisodeBagWriter


def publish_episode(bag: EpisodeBagWriter, specs: list[TopicSpec], times: dict[str, list[int]],
                    partial: Path, final: Path, *, name: str, started_at: str, stopped_at: str,
                    storage: str, distro: str, metadata: dict[str, Any], success: bool,
                    notes: str = '') -> Path:
    """Close ``bag`` (written under ``partial``), write its sidecar and rename it to ``final``."""
    streams = {s.name: stream_stats(s.name, s.msgtype, times[s.name], s.expected_rate_hz)
               for s in specs}
    firsts = [s.first_ns for s in streams.values() if s.first_ns is not None]
    lasts = [s.last_ns for s in streams.values() if s.last_ns is not None]
    duration = (max(lasts) - min(firsts)) / 1e9 if firsts else 0.0
    summary = EpisodeSummary(str(final), COMPLETE, success, duration, bag.bytes_written, 0,
                             streams)
    bag.set_custom_data('comsim.metadata', dump_yaml(metadata))
    bag.set_custom_data('comsim.summary', dump_yaml(summary.to_dict()))
    bag.close()
    size = sum(p.stat().st_size for p in partial.rglob('*') if p.is_file())
    summary = EpisodeSummary(str(final), COMPLETE, success, duration, bag.bytes_written, size,
                             streams)
    write_sidecar(partial, {
        'format': SIDECAR_FORMAT, 'episode': name, 'status': COMPLETE,
        'started_at': started_at, 'stopped_at': stopped_at, 'storage': storage,
        'distro': distro, 'bag_file': bag.storage_file.name,
        'topics': [{'name': s.name, 'msgtype': s.msgtype,
                    'expected_rate_hz': s.expected_rate_hz} for s in specs],
        'metadata': metadata, 'success': bool(success), 'notes': notes,
        'summary': summary.to_dict()})
    if final.exists():
        shutil.rmtree(final)
    os.replace(partial, final)
    return final
