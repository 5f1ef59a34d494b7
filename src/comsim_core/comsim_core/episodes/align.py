"""Time alignment primitives (pure numpy): interpolation, zero-order hold, trajectory merging."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .errors import AlignmentError

if TYPE_CHECKING:
    from collections.abc import Sequence


def interpolate_at(t_src: np.ndarray, values: np.ndarray, t: int, tol_ns: float,
                   what: str = 'joint states') -> np.ndarray:
    """Linear interpolation of ``values`` (N, J) at ``t``; samples must bracket ``t`` within tol.

    Raises ``AlignmentError`` (with the gap) when no sample is at/before or at/after ``t`` within
    ``tol_ns``.
    """
    if t_src.size == 0:
        raise AlignmentError(f'no {what} at all', float('inf'))
    hi = int(np.searchsorted(t_src, t, side='left'))
    if hi < t_src.size and t_src[hi] == t:
        return values[hi].astype(np.float64)
    lo = hi - 1
    gap_before = t - t_src[lo] if lo >= 0 else np.inf
    gap_after = t_src[hi] - t if hi < t_src.size else np.inf
    gap = max(gap_before, gap_after)
    if gap > tol_ns:
        raise AlignmentError(
            f'{what} do not bracket t={t} ns within {tol_ns / 1e9:.4f} s '
            f'(before: {gap_before / 1e9:.4f} s, after: {gap_after / 1e9:.4f} s)', float(gap) / 1e9)
    w = (t - t_src[lo]) / (t_src[hi] - t_src[lo])
    return (1.0 - w) * values[lo] + w * values[hi]


def hold_at(t_src: np.ndarray, values: np.ndarray, t: int) -> np.ndarray | None:
    """Zero-order hold: the latest value at or before ``t`` (None before the first)."""
    i = int(np.searchsorted(t_src, t, side='right')) - 1
    return None if i < 0 else values[i].astype(np.float64)


def merge_trajectories(segments: Sequence[tuple[int, np.ndarray, np.ndarray]]
                       ) -> tuple[np.ndarray, np.ndarray]:
    """The goal the controller is tracking, as a zero-order-hold series, from trajectories
    (``base_ns``, point times, positions) in arrival order.

    From its start a trajectory heads for its first point, and once a point's time has come, for
    the next; after the last point it holds it. So the goal in force from ``base`` is point 0,
    from point i's time it is point i+1. JointTrajectoryController semantics for replacement: a
    new trajectory replaces the rest of the previous ones from its own start on.
    A teleop stream of one-point trajectories thus gives each message's target from its arrival
    (the action label a policy learns), not only at the instant its point falls due.
    """
    times: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    # Latest time in any kept segment but the last. Once a trajectory has cut the others at its
    # start, only the newest can reach past a later start: in-order streams cut one segment per
    # message (linear, a 50 Hz look-ahead teleop sends thousands), out-of-order ones cut all.
    settled_end = np.iinfo(np.int64).min
    for base, pt, pos in segments:
        pt = np.asarray(pt, dtype=np.int64)
        pos = np.asarray(pos, dtype=np.float64)
        reach_back = settled_end >= base
        for i in range(0 if reach_back else max(len(times) - 1, 0), len(times)):
            keep = times[i] < base
            times[i], vals[i] = times[i][keep], vals[i][keep]
        if reach_back:
            settled_end = max((int(t[-1]) for t in times[:-1] if t.size),
                              default=np.iinfo(np.int64).min)
        if pt.size == 0:
            continue
        ahead = np.flatnonzero(pt > base)  # points already due at the start are skipped
        if ahead.size == 0:
            starts, goals = np.array([base], dtype=np.int64), pos[-1:]
        else:
            starts = np.concatenate([[base], pt[ahead[0]:-1]]).astype(np.int64)
            goals = pos[ahead[0]:]
        if times and times[-1].size:
            settled_end = max(settled_end, int(times[-1].max()))
        times.append(starts)
        vals.append(goals)
    if not times:
        return np.zeros(0, dtype=np.int64), np.zeros((0, 0))
    t_all = np.concatenate(times)
    v_all = np.concatenate(vals) if any(v.size for v in vals) else np.zeros((t_all.size, 0))
    order = np.argsort(t_all, kind='stable')
    return t_all[order], v_all[order]
