"""Replay recorded episodes in the twin: paired episodes (real | sim), gap report, batch CLI."""
from comsim_core.episodes.paired import PairedEpisodeWriter, is_complete_paired
from comsim_twin.replay.gap import gap_report, side_by_side
from comsim_twin.replay.replay import (
    EpisodeReplay,
    ReplayError,
    ReplayEvent,
    paired_path,
    replay_episode,
)

__all__ = ['EpisodeReplay', 'PairedEpisodeWriter', 'ReplayError', 'ReplayEvent', 'gap_report',
           'is_complete_paired', 'paired_path', 'replay_episode', 'side_by_side']
