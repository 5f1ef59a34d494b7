"""Recorded joint positions resampled on a fixed step grid (replays, ground-truth renders)."""
from __future__ import annotations

import numpy as np


class JointTrack:
    """Recorded joint positions sampled on the twin's physics-step grid.

    Row k of ``step_rows`` is the arm's pose and velocity at time k * dt after the first sample
    (the start of physics step k): positions interpolated linearly between joint-state stamps
    and held at the ends, velocity the slope of the segment holding that time (zero outside
    the samples). Rows are computed in blocks, so a replay does no per-step interpolation.
    """

    BLOCK = 4096   # steps per block: a few hundred KB, seconds of episode

    def __init__(self, t_ns: np.ndarray, q: np.ndarray, dt_s: float) -> None:
        self.t0_ns = int(t_ns[0])
        self.t = (np.asarray(t_ns, dtype=np.int64) - self.t0_ns).astype(np.float64)
        self.q = np.asarray(q, dtype=np.float64)
        self.dt_ns = dt_s * 1e9
        self._block = -1
        self._pos = self._vel = np.zeros((0, self.q.shape[1]))

    def at(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(positions, per-second velocities), each (len(t), joints), at ns since t0."""
        t = np.atleast_1d(np.asarray(t, dtype=np.float64))
        pos = np.stack([np.interp(t, self.t, col) for col in self.q.T], axis=1)
        vel = np.zeros_like(pos)
        inside = (t >= self.t[0]) & (t < self.t[-1])
        if self.t.size >= 2 and inside.any():
            hi = np.searchsorted(self.t, t[inside], side='right')
            lo = hi - 1
            vel[inside] = (self.q[hi] - self.q[lo]) / ((self.t[hi] - self.t[lo]) * 1e-9)[:, None]
        return pos, vel

    def step_rows(self, first: int, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Pose and velocity rows for steps first .. first + n - 1."""
        pos, vel = [], []
        k, end = first, first + n
        while k < end:
            block, off = divmod(k, self.BLOCK)
            if block != self._block:
                steps = np.arange(block * self.BLOCK, (block + 1) * self.BLOCK)
                self._pos, self._vel = self.at(steps * self.dt_ns)
                self._block = block
            take = min(end - k, self.BLOCK - off)
            pos.append(self._pos[off:off + take])
            vel.append(self._vel[off:off + take])
            k += take
        if len(pos) == 1:
            return pos[0], vel[0]
        return np.concatenate(pos), np.concatenate(vel)
