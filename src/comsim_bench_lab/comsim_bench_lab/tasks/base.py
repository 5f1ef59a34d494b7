"""Task interface: layout sampling from a seed, optional per-step tracking, success check.

Tasks see the simulation only through ObjectView (poses/velocities of named objects), so
they stay plain logic that tests can drive with fake views.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from comsim_bench_lab.config import ObjectConfig, RegionConfig, TaskConfig
from comsim_bench_lab.scene import Marker


class ObjectView(Protocol):
    def pose(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Position (3,) and quaternion (w, x, y, z) of an object body."""

    def velocity(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Linear (3,) and angular (3,) velocity of an object body (world frame)."""


@dataclass
class Placement:
    xy: np.ndarray
    yaw: float


def yaw_quat(yaw: float) -> np.ndarray:
    return np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)])


def tilt_of(quat: np.ndarray) -> float:
    """Angle (rad) between the body z axis and the world z axis."""
    w, x, y, z = quat
    zz = 1.0 - 2.0 * (x * x + y * y)
    return float(np.arccos(np.clip(zz, -1.0, 1.0)))


def footprint(obj: ObjectConfig) -> float:
    """Radius of the object's footprint on the table (for spacing)."""
    if obj.shape == 'box':
        return float(np.hypot(obj.size[0], obj.size[1]))
    return float(obj.size[0])


class Task(ABC):
    """One bench task. Subclasses set `name` and implement sample() and check_success()."""

    name: str = ''
    still_lin: float = 0.02   # m/s: "nearly still"
    still_ang: float = 0.3    # rad/s

    def __init__(self, cfg: TaskConfig):
        self.cfg = cfg
        self.target: dict[str, Any] = {}

    @property
    def variants(self) -> list[str]:
        return list(self.cfg.variants)

    def markers(self) -> list[Marker]:
        return []

    def marker_poses(self) -> dict[str, tuple[float, float, float]]:
        """x, y, yaw of each marker for the current episode."""
        return {}

    def reset_tracking(self) -> None:
        """Clear per-episode tracking state (called at reset)."""

    def update(self, view: ObjectView, table_z: float) -> None:
        """Called every few physics steps during an episode (for stateful checks)."""

    @abstractmethod
    def sample(self, rng: np.random.Generator, region: RegionConfig,
               objects: dict[str, ObjectConfig]) -> dict[str, Placement]:
        """Initial layout of every object inside the region; also sets self.target."""

    @abstractmethod
    def check_success(self, view: ObjectView, objects: dict[str, ObjectConfig],
                      table_z: float) -> tuple[bool, str]:
        ...

    def is_still(self, view: ObjectView, name: str) -> bool:
        lin, ang = view.velocity(name)
        return bool(np.linalg.norm(lin) < self.still_lin and np.linalg.norm(ang) < self.still_ang)


def sample_separated(rng: np.random.Generator, region: RegionConfig, radii: list[float],
                     min_gap: float, tries: int = 200) -> list[np.ndarray]:
    """Positions inside region whose footprints stay min_gap apart (rejection sampling)."""
    for _ in range(tries):
        pts = [region.sample(rng, margin=r) for r in radii]
        ok = all(np.linalg.norm(pts[i] - pts[j]) >= radii[i] + radii[j] + min_gap
                 for i in range(len(pts)) for j in range(i))
        if ok:
            return pts
    raise ValueError(f'region {region} too small to place {len(radii)} objects {min_gap} m apart')
