"""Crops: random at training time (the Diffusion Policy augmentation), centred at inference.

One crop offset per camera per window, shared across the observation steps, so the motion
between the two observed frames is not corrupted by a jittering crop.
"""

from __future__ import annotations

import numpy as np


def crop_offsets(image_hw: tuple[int, int], crop_hw: list[int] | tuple[int, int],
                 rng: np.random.Generator | None) -> tuple[int, int]:
    """Top-left corner: uniform when ``rng`` is given, centred otherwise."""
    dh, dw = image_hw[0] - int(crop_hw[0]), image_hw[1] - int(crop_hw[1])
    if dh < 0 or dw < 0:
        raise ValueError(f'crop {list(crop_hw)} is larger than the image {list(image_hw)}')
    if rng is None:
        return dh // 2, dw // 2
    return int(rng.integers(0, dh + 1)), int(rng.integers(0, dw + 1))


def crop(frames: np.ndarray, crop_hw: list[int] | tuple[int, int],
         rng: np.random.Generator | None = None) -> np.ndarray:
    """(T, H, W, C) -> (T, h, w, C): random crop with ``rng``, centre crop without."""
    y, x = crop_offsets(frames.shape[1:3], crop_hw, rng)
    return frames[:, y:y + int(crop_hw[0]), x:x + int(crop_hw[1])]
