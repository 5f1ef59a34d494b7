"""Live mirror: the twin's arm follows the latest measured joint state; objects follow physics."""
from __future__ import annotations

from typing import Any

import numpy as np

from comsim_twin.replay.replay import ReplayError


class JointMirror:
    """Place the twin arm at each measured state, step physics for the elapsed time, render."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.joint_names = list(backend.joint_names)
        self.q: np.ndarray | None = None
        self.stamp_ns = 0

    def update(self, names: list[str], position, stamp_ns: int) -> None:
        """A measured joint state (any joint order; every twin joint must be named)."""
        names = list(names)
        missing = [n for n in self.joint_names if n not in names]
        if missing or len(position) != len(names):
            raise ReplayError(f'joint state names {names} ({len(position)} positions) do not '
                              f'cover the robot model joints {self.joint_names}')
        index = {n: i for i, n in enumerate(names)}
        self.q = np.asarray([position[index[n]] for n in self.joint_names], float)
        self.stamp_ns = int(stamp_ns)

    def tick(self, dt: float) -> dict[str, np.ndarray] | None:
        """Advance ``dt`` seconds with the arm held at the latest state; renders, or None."""
        if self.q is None:
            return None
        b = self.backend
        b.set_joint_positions(self.q)
        b.step(max(1, int(round(dt / b.timestep))))
        return {cam: b.render(cam) for cam in b.camera_names}
