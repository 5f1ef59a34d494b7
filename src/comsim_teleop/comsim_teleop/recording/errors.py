"""Exceptions raised by the recording package."""

from __future__ import annotations


class RecorderError(Exception):
    """The recorder cannot do what was asked (wrong state, no disk space, failed write)."""


class BagWriteError(RecorderError):
    """Writing the bag failed mid-episode (e.g. ENOSPC or EFBIG); the episode is marked failed."""


class RecoveryError(Exception):
    """An episode directory cannot be recovered (nothing readable left, unknown layout)."""
