"""Exceptions raised by the recording package."""

from __future__ import annotations

from comsim_core.episodes.errors import BagWriterError
from comsim_core.errors import UserError


class RecorderError(BagWriterError):
    """The recorder cannot do what was asked (wrong state, no disk space, failed write)."""


class BagWriteError(RecorderError):
    """Writing the bag failed mid-episode (e.g. ENOSPC or EFBIG); the episode is marked failed."""


class RecoveryError(UserError):
    """An episode directory cannot be recovered (not a bag, unknown layout): one line, exit 2."""
