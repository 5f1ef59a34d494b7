"""Sensor-side image effects of the realism profile.

Exposure, white balance, vignetting, blur and noise.

These happen after the lens (distortion) in a real camera pipeline, so they are applied to
the distorted W x H image; the per-pixel gain is precomputed once per camera.
"""
from __future__ import annotations

import cv2
import numpy as np

from comsim_bench_lab.realism import RealismProfile


class SensorModel:
    def __init__(self, profile: RealismProfile, width: int, height: int, seed: int = 0):
        self.profile = profile
        ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
        r2 = ((xs - width / 2) / (width / 2)) ** 2 + ((ys - height / 2) / (height / 2)) ** 2
        vignette = 1.0 - profile.vignetting * np.clip(r2 / 2.0, 0.0, 1.0)
        gain = vignette[..., None] * (profile.exposure * profile.white_balance.astype(np.float32))
        self.gain = gain.astype(np.float32)
        self.rng = np.random.default_rng(seed)

    def apply(self, image: np.ndarray) -> np.ndarray:
        img = image.astype(np.float32) * self.gain
        if self.profile.blur_sigma > 0:
            img = cv2.GaussianBlur(img, (0, 0), self.profile.blur_sigma)
        if self.profile.noise_std > 0:
            img += self.rng.standard_normal(img.shape, dtype=np.float32) * self.profile.noise_std
        return np.clip(img, 0, 255).astype(np.uint8)
