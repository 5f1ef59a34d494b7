"""Episode reader API: ``Episode.open(path)`` and the data it returns."""

from .errors import (
    AlignmentError,
    CorruptEpisodeError,
    EpisodeError,
    EpisodeNotFoundError,
    MissingTopicError,
    WrongEncodingError,
)
from .reader import Episode, FrameStream
from .types import Commands, Frame, JointStates, StreamInfo

__all__ = [
    'AlignmentError',
    'Commands',
    'CorruptEpisodeError',
    'Episode',
    'EpisodeError',
    'EpisodeNotFoundError',
    'Frame',
    'FrameStream',
    'JointStates',
    'MissingTopicError',
    'StreamInfo',
    'WrongEncodingError',
]
