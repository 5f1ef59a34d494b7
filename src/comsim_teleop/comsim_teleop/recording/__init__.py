"""Episode recording on the robot: the recorder state machine and crash recovery.

The bag writer, sidecar and stream statistics it uses live in ``comsim_core.episodes``.
"""

from .errors import BagWriteError, RecorderError, RecoveryError
from .recorder import EpisodeRecorder, RecorderStatus

__all__ = ['BagWriteError', 'EpisodeRecorder', 'RecorderError', 'RecorderStatus', 'RecoveryError']
