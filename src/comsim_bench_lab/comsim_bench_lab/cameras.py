"""OpenCV calibration <-> MuJoCo camera, and lens distortion applied to renders.

MuJoCo renders an ideal pinhole image; real cameras publish distorted (raw) images with a
plumb_bob calibration. We render a slightly larger pinhole image (padding so that barrel
distortion has pixels to pull in from) and warp it with cv2.remap to the calibrated W x H.
"""
from __future__ import annotations

from dataclasses import dataclass

import cv2
import mujoco
import numpy as np

from comsim_bench_lab.config import CameraConfig

_FLIP = np.diag([1.0, -1.0, -1.0])   # OpenCV camera axes -> MuJoCo camera axes (y up, z back)
_PIXEL_PITCH = 1e-5                  # arbitrary sensor pixel size; only ratios matter


@dataclass
class CameraCalibration:
    """Ground-truth calibration of one lab camera (what a ROS CameraInfo would carry)."""

    name: str
    width: int
    height: int
    K: np.ndarray
    D: np.ndarray
    T_base_camera: np.ndarray          # 4x4 pose of the OpenCV camera frame in the base frame
    distortion_model: str = 'plumb_bob'


def calibration_of(cam: CameraConfig) -> CameraCalibration:
    T = np.eye(4)
    T[:3, :3] = cam.rotation
    T[:3, 3] = cam.position
    return CameraCalibration(cam.name, cam.width, cam.height, cam.K, cam.distortion.copy(), T)


class LensModel:
    """Padded pinhole render geometry plus the remap tables that apply distortion D."""

    def __init__(self, cam: CameraConfig, max_pad_fraction: float = 0.15):
        self.cam = cam
        w, h = cam.width, cam.height
        us, vs = np.meshgrid(np.arange(w, dtype=np.float64), np.arange(h, dtype=np.float64))
        pts = np.stack([us.ravel(), vs.ravel()], axis=1).reshape(-1, 1, 2)
        if np.any(cam.distortion != 0):
            crit = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 40, 1e-6)
            und = cv2.undistortPoints(pts, cam.K, cam.distortion, None, None, cam.K, crit).reshape(h, w, 2)
        else:
            und = pts.reshape(h, w, 2)
        over_x = max(0.0, -und[..., 0].min(), und[..., 0].max() - (w - 1))
        over_y = max(0.0, -und[..., 1].min(), und[..., 1].max() - (h - 1))
        self.pad_x = int(min(np.ceil(over_x) + 2, max_pad_fraction * w)) if over_x > 0 else 0
        self.pad_y = int(min(np.ceil(over_y) + 2, max_pad_fraction * h)) if over_y > 0 else 0
        self.render_width = w + 2 * self.pad_x
        self.render_height = h + 2 * self.pad_y
        map_x = (und[..., 0] + self.pad_x).astype(np.float32)
        map_y = (und[..., 1] + self.pad_y).astype(np.float32)
        self.map1, self.map2 = cv2.convertMaps(map_x, map_y, cv2.CV_16SC2)

    def configure(self, mj_cam: mujoco.MjsCamera) -> None:
        """Set a MuJoCo spec camera's pose and intrinsics from the OpenCV calibration."""
        cam = self.cam
        rot_mj = cam.rotation @ _FLIP
        quat = np.zeros(4)
        mujoco.mju_mat2Quat(quat, rot_mj.reshape(-1))
        mj_cam.pos = cam.position.tolist()
        mj_cam.quat = quat.tolist()
        w, h = self.render_width, self.render_height
        cx, cy = cam.cx + self.pad_x, cam.cy + self.pad_y
        mj_cam.resolution = [w, h]
        mj_cam.sensor_size = [w * _PIXEL_PITCH, h * _PIXEL_PITCH]
        mj_cam.focal_pixel = [cam.fx, cam.fy]
        # +0.5: OpenCV puts pixel centres at integer coordinates, OpenGL at half-integers
        mj_cam.principal_pixel = [w / 2.0 - (cx + 0.5), h / 2.0 - (cy + 0.5)]

    def crop(self, padded: np.ndarray) -> np.ndarray:
        """Undistorted W x H image (the calibrated pinhole view) from the padded render."""
        return padded[self.pad_y:self.pad_y + self.cam.height, self.pad_x:self.pad_x + self.cam.width]

    def distort(self, padded: np.ndarray) -> np.ndarray:
        """Raw (distorted) W x H image as the real lens would produce it."""
        return cv2.remap(padded, self.map1, self.map2, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
