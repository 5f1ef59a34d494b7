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
    """Flatten trajectories (``base_ns``, point times, positions) in arrival order.

    JointTrajectoryController semantics: a new trajectory replaces the not-yet-reached rest of
    the previous ones, so older points at or after the new trajectory's start are dropped.
    """
    times: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    for base, pt, pos in segments:
        cut = [t < base for t in times]
        times = [t[c] for t, c in zip(times, cut, strict=True)]
        vals = [v[c] for v, c in zip(vals, cut, strict=True)]
        times.append(np.asarray(pt, dtype=np.int64))
        vals.append(np.asarray(pos, dtype=np.float64))
    if not times:
        return np.zeros(0, dtype=np.int64), np.zeros((0, 0))
    t_all = np.concatenate(times)
    v_all = np.concatenate(vals) if any(v.size for v in vals) else np.zeros((t_all.size, 0))
    order = np.argsort(t_all, kind='stable')
    return t_all[order], v_all[order]

