"""Rotations the lab, the twin and the tasks share (quaternions are w, x, y, z)."""
from __future__ import annotations

from typing import Sequence

import numpy as np


def yaw_quat(yaw: float) -> np.ndarray:
    """Quaternion of a rotation by `yaw` (rad) about the world z axis."""
    return np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)])


def tilt_of(quat: Sequence[float]) -> float:
    """Angle (rad) between the body z axis and the world z axis: how far an upright object
    leans, whatever its yaw."""
    w, x, y, z = quat
    zz = 1.0 - 2.0 * (x * x + y * y)
    return float(np.arccos(np.clip(zz, -1.0, 1.0)))
