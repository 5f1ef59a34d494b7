"""Fit a training run's step count to a wall-clock deadline.

The learning-rate schedule decays to zero at ``max_steps``, so a run that must end by a time
needs its step count before the end, not a stop when time is up. The rate is measured on the
run itself, validation and checkpoints included, and the count re-planned at each validation.
"""
from __future__ import annotations

import time
from collections.abc import Callable


class StepBudget:
    """``plan(step)``, called after every step (its validation and checkpoint included),
    returns every ``every`` steps the step count that ends the run by ``deadline`` (a
    ``clock()`` time) at the rate measured since ``settle_steps`` after the run's first step,
    and None otherwise. With ``every`` the validation interval, each measurement holds the
    validations in proportion. ``margin`` keeps a little time for the final checkpoint."""

    def __init__(self, deadline: float, every: int, settle_steps: int = 50,
                 margin: float = 0.98, clock: Callable[[], float] = time.monotonic):
        self.deadline = deadline
        self.every = every
        self.settle_steps = settle_steps
        self.margin = margin
        self.clock = clock
        self._first_step: int | None = None
        self._mark: tuple[int, float] | None = None

    def plan(self, step: int) -> int | None:
        now = self.clock()
        if self._first_step is None:
            self._first_step = step - 1
        if self._mark is None:
            if step - self._first_step >= self.settle_steps:
                self._mark = (step, now)
            return None
        mark_step, mark_time = self._mark
        if (step - mark_step) % self.every or now <= mark_time:
            return None
        rate = (step - mark_step) / (now - mark_time)
        left = max(0.0, self.deadline - now) * self.margin
        return step + max(1, int(rate * left))
