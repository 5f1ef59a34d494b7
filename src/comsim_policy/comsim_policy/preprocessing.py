"""``ImagePreprocessor``: camera frames to encoder input, one definition for training and deploy.

A policy only works on pixels prepared the way its training prepared them, so the steps and
their parameters are one object, saved with the weights (JSON in the metadata of the
checkpoint's safetensors file, as diffusers and LeRobot keep a config beside theirs): resize
the native frame to ``image_size`` (area filter when shrinking), crop to ``crop_size`` (random
per window while training, centred otherwise, ``data.augment``), scale to [0, 1] and normalise
each channel (ImageNet statistics, what the ResNet layout expects).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

import cv2
import numpy as np
import torch

from .data.augment import crop

METADATA_KEY = 'image_preprocessor'   # in the weights file's safetensors metadata
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


@dataclass(frozen=True)
class ImagePreprocessor:
    """Resize, crop, scale and normalise; (H, W) pairs are [height, width]."""

    image_size: tuple[int, int]
    crop_size: tuple[int, int]
    mean: tuple[float, float, float] = IMAGENET_MEAN
    std: tuple[float, float, float] = IMAGENET_STD

    def __post_init__(self) -> None:
        for name in ('image_size', 'crop_size', 'mean', 'std'):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        if len(self.image_size) != 2 or len(self.crop_size) != 2:
            raise ValueError('image_size and crop_size are [height, width]')
        if any(c > i for c, i in zip(self.crop_size, self.image_size, strict=True)):
            raise ValueError(f'crop_size {list(self.crop_size)} exceeds image_size '
                             f'{list(self.image_size)}')
        if len(self.mean) != 3 or len(self.std) != 3 or min(self.std) <= 0:
            raise ValueError('mean and std are three per-channel values (std > 0)')

    @classmethod
    def from_config(cls, config: Any) -> ImagePreprocessor:
        """A new policy's preprocessing, from its config's ``image_size`` and ``crop_size``."""
        return cls(tuple(config.image_size), tuple(config.crop_size))

    # -- pixels -------------------------------------------------------------------------------
    def resize(self, frame: np.ndarray) -> np.ndarray:
        """RGB uint8 (H, W, 3) -> (image_size, 3); area filter when shrinking."""
        h, w = (int(v) for v in self.image_size)
        if frame.shape[:2] == (h, w):
            return np.ascontiguousarray(frame)
        interp = cv2.INTER_AREA if frame.shape[0] > h else cv2.INTER_LINEAR
        return cv2.resize(frame, (w, h), interpolation=interp)

    def crop(self, frames: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        """(T, image_size, 3) -> (T, crop_size, 3): random with ``rng``, centred without; one
        offset for the whole window."""
        return crop(frames, self.crop_size, rng)

    def __call__(self, frames: np.ndarray) -> np.ndarray:
        """Native frames (T, H, W, 3) -> the centred crops (T, crop_size, 3) a deployed policy
        sees."""
        return self.crop(np.stack([self.resize(f) for f in frames]))

    def normalise(self, images: torch.Tensor) -> torch.Tensor:
        """uint8 (N, 3, h, w) -> float, in [0, 1] and then per-channel standardised."""
        x = images.float() / 255.0
        mean = torch.tensor(self.mean, dtype=x.dtype, device=x.device).view(1, 3, 1, 1)
        std = torch.tensor(self.std, dtype=x.dtype, device=x.device).view(1, 3, 1, 1)
        return (x - mean) / std

    # -- persistence --------------------------------------------------------------------------
    def to_json(self) -> str:
        return json.dumps({k: list(v) for k, v in asdict(self).items()})

    @classmethod
    def from_json(cls, text: str) -> ImagePreprocessor:
        """ValueError naming what is wrong when ``text`` is not a saved preprocessor."""
        try:
            return cls(**json.loads(text))
        except (json.JSONDecodeError, TypeError) as exc:
            raise ValueError(f'not an image preprocessor: {exc}') from exc
