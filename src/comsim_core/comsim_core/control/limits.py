"""Safety shaping of joint position targets before they reach an arm.

Every command source (teleop, policy) passes its targets through one `CommandShaper`, so joint
limits and speed limits are enforced the same way everywhere.
"""
from __future__ import annotations

import numpy as np


class CommandShaper:
    """Clamps targets to joint limits and moves at most `max_velocity * dt` per step."""

    def __init__(self, lower, upper, max_velocity, velocity_scale: float = 1.0):
        self.lower = np.asarray(lower, dtype=float)
        self.upper = np.asarray(upper, dtype=float)
        self.max_velocity = np.asarray(max_velocity, dtype=float) * float(velocity_scale)
        if not (self.lower.shape == self.upper.shape == self.max_velocity.shape):
            raise ValueError('lower, upper and max_velocity must have one value per joint')
        if np.any(self.lower > self.upper):
            raise ValueError('a lower joint limit exceeds its upper limit')
        self._last: np.ndarray | None = None

    def reset(self, q=None) -> None:
        """Forget the previous target (after a hold, an e-stop or a new episode)."""
        self._last = None if q is None else np.clip(np.asarray(q, float), self.lower, self.upper)

    def _checked(self, target) -> np.ndarray:
        target = np.asarray(target, dtype=float)
        if target.shape != self.lower.shape:
            raise ValueError(f'target has {target.size} values, expected {self.lower.size}')
        if not np.all(np.isfinite(target)):
            raise ValueError('target contains NaN or inf')
        return target

    def __call__(self, target, dt: float) -> np.ndarray:
        """The shaped target for a step of `dt` seconds; NaN targets are refused."""
        q = np.clip(self._checked(target), self.lower, self.upper)
        if self._last is not None and dt > 0:
            step = self.max_velocity * dt
            q = np.clip(q, self._last - step, self._last + step)
        self._last = q
        return q.copy()

    def path(self, targets, dt: float, elapsed: float) -> np.ndarray:
        """Shape a look-ahead path (n, joints) whose points lie `dt` apart: point 0 may move
        `elapsed` seconds' worth from the previous command's point 0, each later point `dt`'s
        worth from the one before. Point 0 becomes the previous command."""
        targets = np.atleast_2d(np.asarray(targets, dtype=float))
        out = np.empty_like(targets)
        out[0] = self(targets[0], elapsed)
        step = self.max_velocity * dt
        for i in range(1, len(targets)):
            q = np.clip(self._checked(targets[i]), self.lower, self.upper)
            out[i] = np.clip(q, out[i - 1] - step, out[i - 1] + step)
        return out
