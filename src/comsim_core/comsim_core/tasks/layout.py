"""Initial layouts: where a task's objects start (xy, yaw) and its target, drawn from a seed.

A region is the rectangle of the table a task is laid out in (the lab's id/ood, the twin's
id/wide); the draws are plain numpy so the same seed gives the same layout everywhere.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from comsim_core.errors import UserError


class LayoutError(UserError, ValueError):
    """A region that cannot hold the task's objects."""


@dataclass(frozen=True)
class Region:
    x: tuple[float, float]   # (min, max), m
    y: tuple[float, float]

    @classmethod
    def of(cls, x: Sequence[float], y: Sequence[float]) -> 'Region':
        return cls((float(x[0]), float(x[1])), (float(y[0]), float(y[1])))

    def __str__(self) -> str:
        return f"{{'x': {list(self.x)}, 'y': {list(self.y)}}}"

    def sample(self, rng: np.random.Generator, margin: float = 0.0) -> np.ndarray:
        """A uniform xy at least `margin` inside the edges."""
        lo = np.array([self.x[0] + margin, self.y[0] + margin])
        hi = np.array([self.x[1] - margin, self.y[1] - margin])
        if np.any(hi < lo):
            raise LayoutError(f'region {self} is smaller than the object margin {margin}')
        return rng.uniform(lo, hi)


@dataclass
class Placement:
    xy: np.ndarray
    yaw: float


@dataclass
class Layout:
    placements: dict[str, Placement]
    target: dict[str, Any] = field(default_factory=dict)   # what the program and check get


def yaw_range(params: dict[str, Any], default: tuple[float, float]) -> tuple[float, float]:
    lo, hi = params.get('yaw', default)
    return float(lo), float(hi)


def sample_separated(rng: np.random.Generator, region: Region, radii: list[float],
                     min_gap: float, tries: int = 500) -> list[np.ndarray]:
    """Positions inside region whose footprints stay min_gap apart (rejection sampling)."""
    for _ in range(tries):
        pts = [region.sample(rng, margin=r) for r in radii]
        ok = all(np.linalg.norm(pts[i] - pts[j]) >= radii[i] + radii[j] + min_gap
                 for i in range(len(pts)) for j in range(i))
        if ok:
            return pts
    raise LayoutError(f'region {region} too small to place {len(radii)} objects {min_gap} m '
                      f'apart')
