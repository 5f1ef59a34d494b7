"""Calibrated-camera maths: project base-frame points to raw pixels, pixels to the table plane.

Raw (distorted) pixels throughout, because that is what the episode's images hold.
"""
from __future__ import annotations

import cv2
import numpy as np

from comsim_twin.scene import TwinCamera


def camera_pose(cam: TwinCamera) -> tuple[np.ndarray, np.ndarray]:
    """(R, t) with X_cam = R X_base + t."""
    T = np.asarray(cam.T_base_camera, float)
    R = T[:3, :3].T
    return R, -R @ T[:3, 3]


def camera_centre(cam: TwinCamera) -> np.ndarray:
    return np.asarray(cam.T_base_camera, float)[:3, 3].copy()


def project(cam: TwinCamera, points: np.ndarray) -> np.ndarray:
    """(N, 3) base-frame points -> (N, 2) raw pixel coordinates (distortion applied)."""
    pts = np.asarray(points, float).reshape(-1, 3)
    R, t = camera_pose(cam)
    rvec, _ = cv2.Rodrigues(R)
    uv, _ = cv2.projectPoints(pts, rvec, t, np.asarray(cam.K, float), np.asarray(cam.D, float))
    return uv.reshape(-1, 2)


def pixel_rays(cam: TwinCamera, uv: np.ndarray) -> np.ndarray:
    """(N, 2) raw pixels -> (N, 3) unit ray directions in the base frame."""
    pts = np.asarray(uv, float).reshape(-1, 1, 2)
    norm = cv2.undistortPoints(pts, np.asarray(cam.K, float), np.asarray(cam.D, float))
    d_cam = np.concatenate([norm.reshape(-1, 2), np.ones((len(pts), 1))], axis=1)
    d = d_cam @ np.asarray(cam.T_base_camera, float)[:3, :3].T
    return d / np.linalg.norm(d, axis=1, keepdims=True)


def pixels_to_plane(cam: TwinCamera, uv: np.ndarray, z: float) -> np.ndarray:
    """(N, 2) raw pixels -> (N, 3) points where their rays meet the plane Z = z (NaN if never)."""
    c = camera_centre(cam)
    d = pixel_rays(cam, uv)
    with np.errstate(divide='ignore', invalid='ignore'):
        s = (z - c[2]) / d[:, 2]
    s = np.where(s > 0, s, np.nan)
    return c + s[:, None] * d


def fuse_rays_on_plane(centres: list[np.ndarray], rays: list[np.ndarray], z: float,
                       weights: list[float] | None = None) -> np.ndarray:
    """Least-squares (x, y) on the plane Z = z closest to every ray (one ray per camera).

    Minimises the weighted squared distance of the point P = (x, y, z) to each ray; with one
    ray this is the ray-plane intersection.
    """
    A = np.zeros((2, 2))
    b = np.zeros(2)
    weights = weights or [1.0] * len(rays)
    for c, d, w in zip(centres, rays, weights):
        d = d / np.linalg.norm(d)
        M = np.eye(3) - np.outer(d, d)       # projector orthogonal to the ray
        # distance^2 = (P - c)^T M (P - c), P = (x, y, z): solve for x, y
        A += w * M[:2, :2]
        b += w * (M[:2, :2] @ c[:2] - M[:2, 2] * (z - c[2]))
    return np.linalg.solve(A, b)
