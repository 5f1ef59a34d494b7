"""ROS camera_calibration YAML (what camera_info_manager reads) plus the camera's pose.

Standard keys: image_width, image_height, camera_name, camera_matrix, distortion_model
(plumb_bob), distortion_coefficients, rectification_matrix, projection_matrix. Added key:
T_base_camera (4x4, OpenCV optical frame in the robot base frame), which ROS readers ignore.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import cv2
import numpy as np
import yaml

from comsim_core.config import field_error, load_config
from comsim_twin.scene import TwinCamera

from .errors import CalibrationError


def _matrix(a: np.ndarray, rows: int, cols: int) -> dict:
    return {'rows': rows, 'cols': cols,
            'data': [float(x) for x in np.asarray(a, float).reshape(-1)]}


def camera_yaml_dict(name: str, width: int, height: int, K: np.ndarray, D: np.ndarray,
                     T_base_camera: np.ndarray) -> dict:
    K, D = np.asarray(K, float), np.asarray(D, float).reshape(-1)
    # monocular, unrectified: P = [K' | 0] with K' the alpha = 0 undistorted camera matrix,
    # as ROS camera_calibration writes it
    new_K, _ = cv2.getOptimalNewCameraMatrix(K, D, (width, height), 0.0)
    P = np.hstack([new_K, np.zeros((3, 1))])
    return {'image_width': int(width), 'image_height': int(height), 'camera_name': name,
            'camera_matrix': _matrix(K, 3, 3), 'distortion_model': 'plumb_bob',
            'distortion_coefficients': _matrix(D, 1, D.size),
            'rectification_matrix': _matrix(np.eye(3), 3, 3),
            'projection_matrix': _matrix(P, 3, 4),
            'T_base_camera': _matrix(T_base_camera, 4, 4)}


def write_camera_yaml(path: str | Path, name: str, width: int, height: int, K: np.ndarray,
                      D: np.ndarray, T_base_camera: np.ndarray) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f'.{path.name}.tmp')
    tmp.write_text(yaml.safe_dump(camera_yaml_dict(name, width, height, K, D, T_base_camera),
                                  sort_keys=False, default_flow_style=None))
    tmp.replace(path)
    return path


@dataclass(frozen=True)
class MatrixEntry:
    """A matrix as camera_calibration writes it: its shape and its numbers row-major."""

    rows: int
    cols: int
    data: list[float]

    def __post_init__(self) -> None:
        if len(self.data) != self.rows * self.cols:
            raise field_error(CalibrationError, 'data', f'needs rows x cols = '
                                                        f'{self.rows * self.cols} numbers, '
                                                        f'got {len(self.data)}')

    def array(self, shape: tuple[int, int], key: str, source: str) -> np.ndarray:
        if (self.rows, self.cols) != shape:
            raise CalibrationError(f'{source}: {key}: expected {shape[0]}x{shape[1]}, got '
                                   f'{self.rows}x{self.cols}')
        return np.reshape(self.data, shape)


@dataclass(frozen=True)
class CameraFile:
    """A camera calibration YAML as written: ROS's keys plus T_base_camera."""

    image_width: int
    image_height: int
    camera_matrix: MatrixEntry
    distortion_coefficients: MatrixEntry
    T_base_camera: MatrixEntry
    camera_name: str | None = None
    distortion_model: Literal['plumb_bob'] = 'plumb_bob'
    rectification_matrix: MatrixEntry | None = None
    projection_matrix: MatrixEntry | None = None


def read_camera_yaml(path: str | Path) -> dict:
    """The file's calibration as arrays: name, width, height, K, D, T_base_camera."""
    path = Path(path)
    if not path.exists():
        raise CalibrationError(f'camera calibration {path} not found')
    file = load_config(path, CameraFile, what='camera calibration', error=CalibrationError)
    src = str(path)
    D = np.asarray(file.distortion_coefficients.data, float)
    if D.size < 5:
        D = np.concatenate([D, np.zeros(5 - D.size)])
    return {'name': file.camera_name or path.stem,
            'width': file.image_width, 'height': file.image_height,
            'K': file.camera_matrix.array((3, 3), 'camera_matrix', src), 'D': D[:5],
            'T_base_camera': file.T_base_camera.array((4, 4), 'T_base_camera', src)}


def load_twin_camera(path: str | Path, topic: str = '') -> TwinCamera:
    """A calibrated camera of the twin scene from a camera YAML written by this package."""
    c = read_camera_yaml(path)
    return TwinCamera(c['name'], c['width'], c['height'], c['K'], c['D'], c['T_base_camera'],
                      topic)
