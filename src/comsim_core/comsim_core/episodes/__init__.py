"""Episode I/O: ``find_episodes`` under a folder, ``Episode.open(path)`` and the data it returns,
``EpisodeMeta`` (typed sidecar metadata)."""

from typing import TYPE_CHECKING

from .errors import (
    AlignmentError,
    CorruptEpisodeError,
    CorruptImageError,
    EpisodeError,
    EpisodeNotFoundError,
    MissingTopicError,
    WrongEncodingError,
)
from .layout import PARTIAL_DIR, find_episodes, is_complete, is_episode_dir
from .meta import EpisodeMeta, read_meta
from .types import Commands, Frame, JointStates, StreamInfo

if TYPE_CHECKING:
    from .reader import Episode, FrameStream

__all__ = [
    'AlignmentError',
    'Commands',
    'CorruptEpisodeError',
    'CorruptImageError',
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


def __getattr__(name: str) -> object:
    """``Episode`` and ``FrameStream`` load the bag reader (rosbags) on first use: code that
    only handles decoded arrays (the policy's GPU path) runs where rosbags is not installed."""
    if name in ('Episode', 'FrameStream'):
        from . import reader  # noqa: PLC0415
        return getattr(reader, name)
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
