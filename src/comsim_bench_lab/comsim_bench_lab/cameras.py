"""The bench lab's cameras: ground-truth calibration and the lens model of each camera.

The geometry itself (OpenCV -> MuJoCo camera, padded render, distortion remap) lives in
``comsim_core.camera`` so the bench lab and the twin render through the very same code.
"""
from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from comsim_bench_lab.config import CameraConfig
from comsim_core.camera import Lens, configure_camera, pose_matrix


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
    T = pose_matrix(cam.rotation, cam.position)
    return CameraCalibration(cam.name, cam.width, cam.height, cam.K, cam.distortion.copy(), T)


class LensModel(Lens):
    """A configured lab camera's ``Lens`` (padded pinhole render + distortion remap)."""

    def __init__(self, cam: CameraConfig, max_pad_fraction: float = 0.15):
        super().__init__(cam.K, cam.distortion, cam.width, cam.height, max_pad_fraction)
        self.cam = cam

    def configure(self, mj_cam: mujoco.MjsCamera) -> None:
        """Set a MuJoCo spec camera's pose and intrinsics from the OpenCV calibration."""
        configure_camera(mj_cam, self, pose_matrix(self.cam.rotation, self.cam.position))
