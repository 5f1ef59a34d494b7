"""Intrinsics (K, plumb_bob D) from chessboard views, with bad views dropped.

Views are dropped twice: where the board is not found, and iteratively where a view's RMS
reprojection error exceeds ``outlier_factor`` x the median (a smeared, misdetected or
mis-ordered view pulls the whole fit, so one bad view must not survive).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import cv2
import numpy as np

from .board import ChessBoard, find_corners
from .errors import CalibrationError

_CRITERIA = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 200, 1e-12)
MIN_VIEWS = 6
OUTLIER_FACTOR = 3.0
ERROR_FLOOR_PX = 0.25    # never reject a view below this error: 3 x a tiny median is just noise


@dataclass
class IntrinsicsResult:
    K: np.ndarray                                  # (3, 3)
    D: np.ndarray                                  # (5,) k1 k2 p1 p2 k3
    rms_px: float                                  # RMS over every corner of the used views
    per_view_error_px: dict[int, float]            # view index -> RMS (used and outlier views)
    used_views: list[int]
    rejected_views: dict[int, str] = field(default_factory=dict)   # index -> reason
    image_size: tuple[int, int] = (0, 0)           # (width, height)
    mean_error_px: float = 0.0                     # mean corner distance over the used views
    rvecs: dict[int, np.ndarray] = field(default_factory=dict, repr=False)
    tvecs: dict[int, np.ndarray] = field(default_factory=dict, repr=False)

    def summary(self) -> dict:
        return {'rms_px': self.rms_px, 'mean_error_px': self.mean_error_px,
                'K': self.K.tolist(), 'D': self.D.tolist(),
                'used_views': list(self.used_views),
                'rejected_views': {int(k): v for k, v in self.rejected_views.items()},
                'per_view_error_px': {int(k): float(v)
                                      for k, v in self.per_view_error_px.items()}}


def view_errors(obj: np.ndarray, img: np.ndarray, K: np.ndarray, D: np.ndarray,
                rvec: np.ndarray, tvec: np.ndarray) -> np.ndarray:
    """Per-corner reprojection distance in pixels."""
    proj, _ = cv2.projectPoints(obj.astype(np.float64), rvec, tvec, K, D)
    return np.linalg.norm(proj.reshape(-1, 2) - img.reshape(-1, 2), axis=1)


def calibrate_from_corners(corners: Sequence[np.ndarray | None], object_points: np.ndarray,
                           image_size: tuple[int, int], *, min_views: int = MIN_VIEWS,
                           outlier_factor: float = OUTLIER_FACTOR, camera: str = 'camera',
                           rejected: dict[int, str] | None = None) -> IntrinsicsResult:
    """Calibrate from detected corners (None = board not found in that view)."""
    rejected = dict(rejected or {})
    obj = np.asarray(object_points, np.float32).reshape(-1, 3)
    found = {}
    for i, c in enumerate(corners):
        if c is None:
            rejected.setdefault(i, 'board not found')
        else:
            found[i] = np.asarray(c, np.float32).reshape(-1, 1, 2)
    if not found:
        raise CalibrationError(f'{camera}: the board was not found in any of the {len(corners)} '
                               f'views')
    if len(found) < min_views:
        raise CalibrationError(f'{camera}: only {len(found)} views with the board found '
                               f'(of {len(corners)}); intrinsics need at least {min_views}')
    used = sorted(found)
    per_view: dict[int, float] = {}
    while True:
        rms, K, D, rvecs, tvecs = cv2.calibrateCamera(
            [obj] * len(used), [found[i] for i in used], image_size, None, None,
            criteria=_CRITERIA)
        errs = {i: view_errors(obj, found[i], K, D, r, t)
                for i, r, t in zip(used, rvecs, tvecs)}
        per_view.update({i: float(np.sqrt(np.mean(e ** 2))) for i, e in errs.items()})
        limit = max(outlier_factor * float(np.median([per_view[i] for i in used])),
                    ERROR_FLOOR_PX)
        bad = [i for i in used if per_view[i] > limit]
        if not bad:
            break
        for i in bad:
            rejected[i] = f'reprojection {per_view[i]:.2f} px > {limit:.2f} px ' \
                          f'({outlier_factor:g} x median)'
        used = [i for i in used if i not in bad]
        if len(used) < min_views:
            raise CalibrationError(f'{camera}: {len(used)} views left after dropping outliers '
                                   f'{bad}; intrinsics need at least {min_views}')
    all_err = np.concatenate([errs[i] for i in used])
    return IntrinsicsResult(K, D.reshape(-1)[:5], float(np.sqrt(np.mean(all_err ** 2))),
                            per_view, used, rejected, tuple(image_size),
                            float(all_err.mean()),
                            {i: r for i, r in zip(used, rvecs)},
                            {i: t for i, t in zip(used, tvecs)})


def calibrate_intrinsics(images: Sequence[np.ndarray], board: ChessBoard, *,
                         min_views: int = MIN_VIEWS, outlier_factor: float = OUTLIER_FACTOR,
                         camera: str = 'camera') -> IntrinsicsResult:
    """K, D from images of ``board`` (RGB or grey, all one size)."""
    if not len(images):
        raise CalibrationError(f'{camera}: no images to calibrate from')
    sizes = {tuple(np.asarray(im).shape[:2]) for im in images}
    if len(sizes) != 1:
        raise CalibrationError(f'{camera}: images differ in size: {sorted(sizes)}')
    h, w = sizes.pop()
    corners = [find_corners(im, board) for im in images]
    return calibrate_from_corners(corners, board.object_points(), (w, h), min_views=min_views,
                                  outlier_factor=outlier_factor, camera=camera)
