"""Episode recording: bag writer, recorder state machine, stream statistics, crash recovery."""

from .bag_writer import EpisodeBagWriter, FlushPolicy
from .errors import BagWriteError, RecorderError, RecoveryError
from .recorder import EpisodeRecorder, RecorderStatus
from .stats import EpisodeSummary, StreamStats
from .topics import TopicSpec

__all__ = [
    'BagWriteError',
    'EpisodeBagWriter',
    'EpisodeRecorder',
    'EpisodeSummary',
    'FlushPolicy',
    'RecorderError',
    'RecorderStatus',
    'RecoveryError',
    'StreamStats',
    'TopicSpec',
]
