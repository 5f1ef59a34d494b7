"""Joint trajectory following with ros2_control's joint_trajectory_controller semantics.

A real arm driver interpolates `trajectory_msgs/JointTrajectory` goals; the bench lab, the twin's
dynamic replay and the policy evaluation must behave the same way, so the rules live here once:

- a trajectory whose start time is zero starts when it is received;
- it replaces whatever was running; the arm moves from its state at the start time to the first
  point (as JTC does when the first point lies in the future), so a stream of one-point goals
  restarts from the measured, lagging state each time, while a look-ahead stream whose first
  point is due at its stamp (time_from_start 0) continues the commanded motion seamlessly;
- between points: cubic Hermite when velocities are given for both ends, otherwise linear;
- after the last point the last positions are held;
- joints may come in any order, but every controlled joint must be named (no partial goals).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


class TrajectoryError(ValueError):
    """A trajectory that the controller rejects (wrong joints, bad timing, non-finite values)."""


@dataclass(frozen=True)
class TrajectoryPoint:
    time_from_start: float
    positions: np.ndarray
    velocities: np.ndarray | None = None


class TrajectoryFollower:
    """Turns position commands and trajectories into a position target at any time."""

    def __init__(self, joint_names: list[str]):
        self.joint_names = list(joint_names)
        self._times: np.ndarray | None = None  # absolute times of the knots
        self._pos: np.ndarray | None = None
        self._vel: np.ndarray | None = None        # knot velocities (zero where not given)
        self._has_vel: np.ndarray | None = None    # which knots were given velocities
        self._hold: np.ndarray | None = None

    def reorder(self, names: list[str], values) -> np.ndarray:
        """Values given in `names` order, returned in controller order."""
        values = np.asarray(values, dtype=float)
        if len(names) != len(values):
            raise TrajectoryError(f'{len(names)} joint names but {len(values)} values')
        missing = [n for n in self.joint_names if n not in names]
        if missing:
            raise TrajectoryError(
                f'joints {missing} missing from goal (expected {self.joint_names})')
        index = {n: i for i, n in enumerate(names)}
        return values[[index[n] for n in self.joint_names]]

    def set_position(self, q, now: float) -> None:
        """Forward position command: the target jumps to q (the driver's own limits apply)."""
        q = np.asarray(q, dtype=float)
        if q.shape != (len(self.joint_names),):
            raise TrajectoryError(
                f'position command has {q.size} values, expected {len(self.joint_names)}')
        if not np.all(np.isfinite(q)):
            raise TrajectoryError('position command contains NaN or inf')
        self._times = None
        self._hold = q.copy()

    def set_trajectory(self, names: list[str], points: list[TrajectoryPoint],
                       start_time: float, now: float, current) -> None:
        """Accept a goal. start_time <= 0 means "now"; `current` is the state at the start."""
        if not points:
            self._times = None
            self._hold = np.asarray(current, dtype=float).copy()
            return
        t0 = now if start_time <= 0 else start_time
        tfs = np.array([p.time_from_start for p in points], dtype=float)
        if np.any(np.diff(tfs) <= 0) or tfs[0] < 0:
            raise TrajectoryError('time_from_start must be non-negative and strictly increasing')
        pos = np.stack([self.reorder(names, p.positions) for p in points])
        if not np.all(np.isfinite(pos)):
            raise TrajectoryError('trajectory contains NaN or inf positions')
        vel = [None if p.velocities is None or len(p.velocities) == 0
               else self.reorder(names, p.velocities) for p in points]
        current = np.asarray(current, dtype=float)
        if tfs[0] > 0:   # the arm's state at the start is the first knot (at rest)
            tfs = np.concatenate([[0.0], tfs])
            pos = np.vstack([current, pos])
            vel = [np.zeros_like(current), *vel]
        self._times = t0 + tfs
        self._pos = pos
        self._has_vel = np.array([v is not None for v in vel])
        self._vel = np.stack([np.zeros(pos.shape[1]) if v is None else v for v in vel])
        self._hold = None

    def target(self, now: float) -> np.ndarray | None:
        """Position target at `now`, or None when no command was ever received."""
        out = self.targets(np.array([now], dtype=float))
        return None if out is None else out[0]

    def targets(self, times: np.ndarray) -> np.ndarray | None:
        """``target`` at each of ``times`` (n,), as (n, joints): a replay asks for every physics
        step between two events at once. None when no command was ever received."""
        times = np.asarray(times, dtype=float).reshape(-1)
        if self._times is None:
            return None if self._hold is None else np.repeat(self._hold[None], times.size, 0)
        knots, pos = self._times, self._pos
        out = np.empty((times.size, pos.shape[1]))
        before, after = times <= knots[0], times >= knots[-1]
        out[before] = pos[0]   # not started yet: the arm holds where the trajectory begins
        out[after & ~before] = pos[-1]
        mid = ~(before | after)
        if mid.any():
            k = np.searchsorted(knots, times[mid], side='right') - 1
            h = knots[k + 1] - knots[k]
            s = ((times[mid] - knots[k]) / h)[:, None]
            seg = (1 - s) * pos[k] + s * pos[k + 1]
            cubic = self._has_vel[k] & self._has_vel[k + 1]
            if cubic.any():
                kc, sc, hc = k[cubic], s[cubic], h[cubic][:, None]
                va, vb = self._vel[kc], self._vel[kc + 1]
                h00, h10 = 2 * sc**3 - 3 * sc**2 + 1, sc**3 - 2 * sc**2 + sc
                h01, h11 = -2 * sc**3 + 3 * sc**2, sc**3 - sc**2
                seg[cubic] = h00 * pos[kc] + h10 * hc * va + h01 * pos[kc + 1] + h11 * hc * vb
            out[mid] = seg
        return out

    @property
    def active(self) -> bool:
        return self._times is not None or self._hold is not None
