"""Lens distortion applied to ideal pinhole renders.

Simulators render an ideal pinhole image; real cameras publish raw (distorted) images. We render
a slightly larger pinhole image (padding, so barrel distortion has pixels to pull in from) and
warp it with cv2.remap to the calibrated W x H.
"""
from __future__ import annotations

import cv2
import numpy as np

DEFAULT_MAX_PAD_FRACTION = 0.15


class Lens:
    """Padded pinhole render geometry plus the remap tables that apply distortion D."""

    def __init__(self, K: np.ndarray, D: np.ndarray, width: int, height: int,
                 max_pad_fraction: float = DEFAULT_MAX_PAD_FRACTION):
        self.K = np.asarray(K, dtype=float).reshape(3, 3)
        self.D = np.asarray(D, dtype=float).reshape(-1)
        if self.D.size != 5:
            raise ValueError(f'distortion needs 5 plumb_bob values (k1 k2 p1 p2 k3), '
                             f'got {self.D.size}')
        if width <= 0 or height <= 0:
            raise ValueError(f'image size must be positive, got {width}x{height}')
        self.width, self.height = int(width), int(height)
        w, h = self.width, self.height
        us, vs = np.meshgrid(np.arange(w, dtype=np.float64), np.arange(h, dtype=np.float64))
        pts = np.stack([us.ravel(), vs.ravel()], axis=1).reshape(-1, 1, 2)
        if np.any(self.D != 0):
            crit = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 40, 1e-6)
            und = cv2.undistortPoints(pts, self.K, self.D, None, None, self.K,
                                      crit).reshape(h, w, 2)
        else:
            und = pts.reshape(h, w, 2)
        over_x = max(0.0, -und[..., 0].min(), und[..., 0].max() - (w - 1))
        over_y = max(0.0, -und[..., 1].min(), und[..., 1].max() - (h - 1))
        self.pad_x = int(min(np.ceil(over_x) + 2, max_pad_fraction * w)) if over_x > 0 else 0
        self.pad_y = int(min(np.ceil(over_y) + 2, max_pad_fraction * h)) if over_y > 0 else 0
        self.render_width = w + 2 * self.pad_x
        self.render_height = h + 2 * self.pad_y
        self.map_x = (und[..., 0] + self.pad_x).astype(np.float32)
        self.map_y = (und[..., 1] + self.pad_y).astype(np.float32)
        self.map1, self.map2 = cv2.convertMaps(self.map_x, self.map_y, cv2.CV_16SC2)

    @property
    def padded_K(self) -> np.ndarray:
        """Camera matrix of the padded pinhole render (principal point shifted by the pad)."""
        K = self.K.copy()
        K[0, 2] += self.pad_x
        K[1, 2] += self.pad_y
        return K

    def crop(self, padded: np.ndarray) -> np.ndarray:
        """Undistorted W x H image (the calibrated pinhole view) from the padded render."""
        return padded[self.pad_y:self.pad_y + self.height, self.pad_x:self.pad_x + self.width]

    def distort(self, padded: np.ndarray) -> np.ndarray:
        """Raw (distorted) W x H image as the real lens would produce it."""
        return cv2.remap(padded, self.map1, self.map2, cv2.INTER_LINEAR,
                         borderMode=cv2.BORDER_REPLICATE)

    def distort_labels(self, padded: np.ndarray) -> np.ndarray:
        """Distort a label image (uint8/uint16 ids) by nearest neighbour: no blended ids."""
        return cv2.remap(padded, self.map_x, self.map_y, cv2.INTER_NEAREST,
                         borderMode=cv2.BORDER_REPLICATE)
