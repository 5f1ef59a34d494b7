"""Flat marks a task draws on the table (move_card's target zone): visual only, placed from the
episode's target so the cameras show what the program and the success check are given."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TableMarker:
    name: str
    half_size: tuple[float, float]
    color: tuple[float, float, float]
    size_param: str     # task parameter holding half_size (a measured mark overrides it)
