"""OpenCV calibration -> MuJoCo camera (pose and intrinsics of a padded render).

MuJoCo cameras look along -Z with +X right, +Y up; OpenCV's optical frame looks along +Z with
+Y down, so the MuJoCo camera rotation is R_opencv @ diag(1, -1, -1). Intrinsics go through
sensor_size/focal_pixel/principal_pixel; the render size must equal ``resolution``.
"""
from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from comsim_core.camera.distortion import Lens
from comsim_core.camera.pinhole import intrinsics

OPENCV_TO_MUJOCO = np.diag([1.0, -1.0, -1.0])
PIXEL_PITCH = 1e-5   # arbitrary sensor pixel size (m); only ratios matter


@dataclass(frozen=True)
class MujocoIntrinsics:
    resolution: tuple[int, int]
    sensor_size: tuple[float, float]
    focal_pixel: tuple[float, float]
    principal_pixel: tuple[float, float]


def mujoco_pose(T_base_camera: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """MuJoCo camera (pos, quat wxyz) for an OpenCV camera pose in the base (world) frame."""
    T = np.asarray(T_base_camera, dtype=float).reshape(4, 4)
    rot_mj = T[:3, :3] @ OPENCV_TO_MUJOCO
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, rot_mj.reshape(-1))
    return T[:3, 3].copy(), quat


def mujoco_intrinsics(K: np.ndarray, width: int, height: int, pad_x: int = 0,
                      pad_y: int = 0) -> MujocoIntrinsics:
    """Intrinsics of a (width + 2 pad_x) x (height + 2 pad_y) render centred on the W x H view.

    The +0.5: OpenCV puts pixel centres at integer coordinates, OpenGL at half-integers; without
    it every point lands half a pixel off (found by the bench lab's projection test).
    """
    fx, fy, cx, cy = intrinsics(K)
    w, h = width + 2 * pad_x, height + 2 * pad_y
    cx, cy = cx + pad_x, cy + pad_y
    return MujocoIntrinsics((w, h), (w * PIXEL_PITCH, h * PIXEL_PITCH), (fx, fy),
                            (w / 2.0 - (cx + 0.5), h / 2.0 - (cy + 0.5)))


def configure_camera(mj_cam: mujoco.MjsCamera, lens: Lens, T_base_camera: np.ndarray) -> None:
    """Set a MuJoCo spec camera's pose and intrinsics for rendering ``lens``'s padded view."""
    pos, quat = mujoco_pose(T_base_camera)
    mj_cam.pos = pos.tolist()
    mj_cam.quat = quat.tolist()
    intr = mujoco_intrinsics(lens.K, lens.width, lens.height, lens.pad_x, lens.pad_y)
    mj_cam.resolution = list(intr.resolution)
    mj_cam.sensor_size = list(intr.sensor_size)
    mj_cam.focal_pixel = list(intr.focal_pixel)
    mj_cam.principal_pixel = list(intr.principal_pixel)
