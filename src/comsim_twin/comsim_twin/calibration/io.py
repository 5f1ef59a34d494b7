"""ROS camera_calibration YAML (what camera_info_manager reads) plus the camera's pose.

Standard keys: image_width, image_height, camera_name, camera_matrix, distortion_model
(plumb_bob), distortion_coefficients, rectification_matrix, projection_matrix. Added key:
T_base_camera (4x4, OpenCV optical frame in the robot base frame), which ROS readers ignore.
"""
from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import yaml

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


def _read_matrix(data: dict, key: str, shape: tuple[int, int], source: str) -> np.ndarray:
    if key not in data:
        raise CalibrationError(f'{source}: missing key {key!r}')
    value = data[key]
    raw = value.get('data') if isinstance(value, dict) else value
    try:
        arr = np.asarray(raw, float).reshape(-1)
    except (TypeError, ValueError):
        raise CalibrationError(f'{source}: {key} must hold numbers') from None
    if arr.size != shape[0] * shape[1]:
        raise CalibrationError(f'{source}: {key} needs {shape[0] * shape[1]} numbers, '
                               f'got {arr.size}')
    return arr.reshape(shape)


def read_camera_yaml(path: str | Path) -> dict:
    """The file's calibration as arrays: name, width, height, K, D, T_base_camera."""
    path = Path(path)
    if not path.exists():
        raise CalibrationError(f'camera calibration {path} not found')
    data = yaml.safe_load(path.read_text(encoding='utf-8'))
    src = str(path)
    if not isinstance(data, dict):
        raise CalibrationError(f'{src}: not a camera calibration (expected a mapping)')
    for key in ('image_width', 'image_height'):
        if key not in data:
            raise CalibrationError(f'{src}: missing key {key!r}')
    model = data.get('distortion_model', 'plumb_bob')
    if model != 'plumb_bob':
        raise CalibrationError(f'{src}: distortion_model {model!r} unsupported (plumb_bob only)')
    d = data.get('distortion_coefficients')
    n = len(d.get('data', []) if isinstance(d, dict) else (d or []))
    D = _read_matrix(data, 'distortion_coefficients', (1, n), src).reshape(-1)
    if D.size < 5:
        D = np.concatenate([D, np.zeros(5 - D.size)])
    return {'name': str(data.get('camera_name', path.stem)),
            'width': int(data['image_width']), 'height': int(data['image_height']),
            'K': _read_matrix(data, 'camera_matrix', (3, 3), src), 'D': D[:5],
            'T_base_camera': _read_matrix(data, 'T_base_camera', (4, 4), src)}


def load_twin_camera(path: str | Path, topic: str = '') -> TwinCamera:
    """A calibrated camera of the twin scene from a camera YAML written by this package."""
    c = read_camera_yaml(path)
    return TwinCamera(c['name'], c['width'], c['height'], c['K'], c['D'], c['T_base_camera'],
                      topic)
