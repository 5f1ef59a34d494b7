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


def pose_difference(T_a: np.ndarray, T_b: np.ndarray) -> tuple[float, float]:
    """(translation metres, rotation degrees) between two 4x4 poses."""
    T_a, T_b = np.asarray(T_a, float), np.asarray(T_b, float)
    dt = float(np.linalg.norm(T_a[:3, 3] - T_b[:3, 3]))
    cos = (np.trace(T_a[:3, :3].T @ T_b[:3, :3]) - 1.0) / 2.0
    return dt, float(np.degrees(np.arccos(np.clip(cos, -1.0, 1.0))))
