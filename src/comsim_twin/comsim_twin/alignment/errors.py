"""The one exception alignment raises for bad input (sheet, episode, images)."""
from __future__ import annotations


class AlignmentError(ValueError):
    """Alignment cannot proceed: says what is missing and what was expected."""
