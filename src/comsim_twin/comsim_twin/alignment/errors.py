"""The one exception alignment raises for bad input (sheet, episode, images)."""
from __future__ import annotations

from comsim_core.errors import UserError


class AlignmentError(UserError, ValueError):
    """Alignment cannot proceed: says what is missing and what was expected."""
