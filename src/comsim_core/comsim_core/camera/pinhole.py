"""OpenCV pinhole model: K, plumb_bob D (k1 k2 p1 p2 k3), pose T_base_camera.

T_base_camera is the pose of the OpenCV optical frame (x right, y down, z forward) in the
robot base frame, so a base-frame point X maps to the camera as inv(T) @ X.
"""
from __future__ import annotations

import cv2
import numpy as np


def intrinsics(K: np.ndarray) -> tuple[float, float, float, float]:
    """(fx, fy, cx, cy) of a 3x3 camera matrix."""
    K = np.asarray(K, dtype=float).reshape(3, 3)
    return float(K[0, 0]), float(K[1, 1]), float(K[0, 2]), float(K[1, 2])


def pose_matrix(rotation: np.ndarray, position: np.ndarray) -> np.ndarray:
    """4x4 homogeneous pose from a 3x3 rotation (columns = camera axes) and a position."""
    T = np.eye(4)
    T[:3, :3] = np.asarray(rotation, dtype=float).reshape(3, 3)
    T[:3, 3] = np.asarray(position, dtype=float).reshape(3)
    return T


def project_points(points: np.ndarray, K: np.ndarray, D: np.ndarray | None,
                   T_base_camera: np.ndarray) -> np.ndarray:
    """Pixel coordinates (N, 2) of base-frame points (N, 3); D None or zeros = ideal pinhole.

    Pixel centres sit at integer coordinates (OpenCV convention).
    """
    pts = np.asarray(points, dtype=float).reshape(-1, 1, 3)
    T_cb = np.linalg.inv(np.asarray(T_base_camera, dtype=float).reshape(4, 4))
    rvec, _ = cv2.Rodrigues(T_cb[:3, :3])
    dist = np.zeros(5) if D is None else np.asarray(D, dtype=float).reshape(-1)
    uv, _ = cv2.projectPoints(pts, rvec, T_cb[:3, 3].copy(), np.asarray(K, float), dist)
    return uv.reshape(-1, 2)
