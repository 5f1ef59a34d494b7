"""Sim episodes -> pseudo-real episodes in the recording format (the paper's data engine)."""

from .episode import (
                      SimEpisode,
                      checkpoint_provenance,
                      read_sim_episode,
                      translate_dir,
                      translate_episode,
)

__all__ = ['SimEpisode', 'checkpoint_provenance', 'read_sim_episode', 'translate_dir',
           'translate_episode']
