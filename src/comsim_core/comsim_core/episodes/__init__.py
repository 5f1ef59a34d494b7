"""Episode I/O: ``find_episodes`` under a folder, ``Episode.open(path)`` and the data it returns,
``EpisodeMeta`` (typed sidecar metadata)."""

from .errors import (
    AlignmentError,
    CorruptEpisodeError,
    EpisodeError,
    EpisodeNotFoundError,
    MissingTopicError,
    WrongEncodingError,
)
from .layout import PARTIAL_DIR, find_episodes, is_complete, is_episode_dir
from .meta import EpisodeMeta, read_meta
from .reader import Episode, FrameStream
from .types import Commands, Frame, JointStates, StreamInfo

__all__ = [
    'AlignmentError',
    'Commands',
    'CorruptEpisodeError',
    'PARTIAL_DIR',
    'Episode',
    'EpisodeError',
    'EpisodeMeta',
    'EpisodeNotFoundError',
    'Frame',
    'FrameStream',
    'JointStates',
    'MissingTopicError',
    'StreamInfo',
    'WrongEncodingError',
    'find_episodes',
    'is_complete',
    'is_episode_dir',
    'read_meta',
]
