"""Camera pose in the robot base frame from views of the board at known table placements.

Each placement's corners are known points in the base frame, so all placements together are
one PnP problem for one camera pose: solved jointly (minimising reprojection over every
placement's corners), started from the best single-placement solution. Per-placement poses are
kept as residuals: their spread says how far to trust the jig and the detections.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import cv2
import numpy as np

from comsim_core.geometry import pose_difference

from .board import ChessBoard, find_corners
from .errors import CalibrationError


@dataclass
class PlacementResidual:
    rms_px: float           # reprojection of this placement's corners under the joint pose
    n_corners: int
    pose_dt_mm: float       # this placement's own PnP camera position vs the joint one
    pose_dangle_deg: float  # ... and orientation


@dataclass
class ExtrinsicsResult:
    T_base_camera: np.ndarray                      # (4, 4), OpenCV optical frame in base
    residuals: dict[str, PlacementResidual]
    rms_px: float
    rejected: dict[str, str] = field(default_factory=dict)   # placement view -> reason

    def __iter__(self):            # T, residuals = calibrate_extrinsics(...)
        return iter((self.T_base_camera, self.residuals))

    def summary(self) -> dict:
        return {'T_base_camera': self.T_base_camera.tolist(), 'rms_px': self.rms_px,
                'residuals': {k: vars(v) for k, v in self.residuals.items()},
                'rejected': dict(self.rejected)}


def to_matrix(rvec: np.ndarray, tvec: np.ndarray) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = cv2.Rodrigues(np.asarray(rvec, float).reshape(3))[0]
    T[:3, 3] = np.asarray(tvec, float).reshape(3)
    return T


def solve_extrinsics(observations: dict[str, tuple[np.ndarray, np.ndarray]], K: np.ndarray,
                     D: np.ndarray, board: ChessBoard, camera: str = 'camera') -> ExtrinsicsResult:
    """observations: placement name -> (corners (N, 2), T_base_board)."""
    if not observations:
        raise CalibrationError(f'{camera}: no table view with the board found; extrinsics need '
                               f'at least one placement')
    K, D = np.asarray(K, float), np.asarray(D, float).reshape(-1)
    obj = board.object_points().astype(np.float64)
    pts_base, pts_img, own = {}, {}, {}
    for name, (corners, T_base_board) in observations.items():
        img = np.asarray(corners, np.float64).reshape(-1, 2)
        ok, rvec, tvec = cv2.solvePnP(obj, img, K, D, flags=cv2.SOLVEPNP_IPPE)
        if not ok:
            raise CalibrationError(f'{camera}: PnP failed for placement {name!r}')
        rvec, tvec = cv2.solvePnPRefineLM(obj, img, K, D, rvec, tvec)
        own[name] = T_base_board @ np.linalg.inv(to_matrix(rvec, tvec))   # T_base_camera
        pts_base[name] = obj @ T_base_board[:3, :3].T + T_base_board[:3, 3]
        pts_img[name] = img
    names = list(observations)
    all_base = np.vstack([pts_base[n] for n in names])
    all_img = np.vstack([pts_img[n] for n in names])
    best, best_err = None, np.inf
    for name in names:                      # start from the placement that explains all best
        T_cam_base = np.linalg.inv(own[name])
        rvec = cv2.Rodrigues(T_cam_base[:3, :3])[0]
        err = _rms(all_base, all_img, K, D, rvec, T_cam_base[:3, 3])
        if err < best_err:
            best, best_err = (rvec, T_cam_base[:3, 3].reshape(3, 1).copy()), err
    rvec, tvec = cv2.solvePnPRefineLM(all_base, all_img, K, D, best[0], best[1],
                                      (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 100,
                                       1e-12))
    T_base_camera = np.linalg.inv(to_matrix(rvec, tvec))
    residuals = {}
    for name in names:
        dt, da = pose_difference(own[name], T_base_camera)
        residuals[name] = PlacementResidual(_rms(pts_base[name], pts_img[name], K, D, rvec, tvec),
                                            len(pts_img[name]), dt * 1000.0, da)
    return ExtrinsicsResult(T_base_camera, residuals, _rms(all_base, all_img, K, D, rvec, tvec))


def _rms(pts: np.ndarray, img: np.ndarray, K, D, rvec, tvec) -> float:
    proj, _ = cv2.projectPoints(pts, rvec, np.asarray(tvec, float).reshape(3, 1), K, D)
    return float(np.sqrt(np.mean(np.sum((proj.reshape(-1, 2) - img) ** 2, axis=1))))


def calibrate_extrinsics(views: Sequence[tuple[str, np.ndarray, np.ndarray]], K: np.ndarray,
                         D: np.ndarray, board: ChessBoard,
                         camera: str = 'camera') -> ExtrinsicsResult:
    """views: (placement name, image, T_base_board). Several images of one placement are
    merged by averaging their corners (same board pose, independent noise)."""
    found: dict[str, list[np.ndarray]] = {}
    poses: dict[str, np.ndarray] = {}
    rejected: dict[str, str] = {}
    for name, image, T_base_board in views:
        poses[name] = np.asarray(T_base_board, float)
        corners = find_corners(image, board)
        if corners is None:
            rejected.setdefault(name, 'board not found')
        else:
            found.setdefault(name, []).append(corners)
    if not found:
        raise CalibrationError(f'{camera}: the board was not found in any of the {len(views)} '
                               f'table views ({sorted(poses)})')
    for name in found:
        rejected.pop(name, None)
    obs = {n: (np.mean(c, axis=0), poses[n]) for n, c in found.items()}
    result = solve_extrinsics(obs, K, D, board, camera)
    result.rejected = rejected
    return result
