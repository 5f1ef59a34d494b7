"""sensor_msgs Image / CompressedImage → RGB uint8 (H, W, 3), without cv_bridge (broken here)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import CorruptEpisodeError, WrongEncodingError

# encoding -> (channels, channel order to take for RGB)
ENCODINGS: dict[str, tuple[int, tuple[int, ...]]] = {
    'rgb8': (3, (0, 1, 2)),
    'bgr8': (3, (2, 1, 0)),
    'rgba8': (4, (0, 1, 2)),
    'bgra8': (4, (2, 1, 0)),
    'mono8': (1, (0, 0, 0)),
    '8uc1': (1, (0, 0, 0)),
    '8uc3': (3, (2, 1, 0)),  # OpenCV convention: 8UC3 is BGR
}


def stamp_ns(header: Any) -> int:
    """A std_msgs/Header stamp as integer nanoseconds."""
    return int(header.stamp.sec) * 1_000_000_000 + int(header.stamp.nanosec)


def image_to_rgb(msg: Any, where: object = 'image') -> np.ndarray:
    """Decode a sensor_msgs/msg/Image into a fresh RGB uint8 array of shape (H, W, 3)."""
    enc = str(msg.encoding).lower()
    if enc not in ENCODINGS:
        raise WrongEncodingError(
            f'{where}: image encoding {msg.encoding!r} is not supported; '
            f'supported: {sorted(ENCODINGS)}')
    channels, order = ENCODINGS[enc]
    h, w, step = int(msg.height), int(msg.width), int(msg.step)
    data = np.asarray(msg.data, dtype=np.uint8).reshape(-1)
    if step < w * channels or step * h != data.size:
        raise CorruptEpisodeError(
            where, f'image {w}x{h} {msg.encoding} step {step}: expected step*height = '
            f'{step * h} bytes (step >= {w * channels}), got {data.size}', recoverable=False)
    rows = data.reshape(h, step)[:, : w * channels].reshape(h, w, channels)
    return np.ascontiguousarray(rows[:, :, list(order)])


def compressed_to_rgb(msg: Any, where: object = 'image') -> np.ndarray:
    """Decode a sensor_msgs/msg/CompressedImage (jpeg/png) into RGB uint8 (H, W, 3)."""
    import cv2  # noqa: PLC0415 - only needed for compressed streams

    buf = np.asarray(msg.data, dtype=np.uint8)
    img = cv2.imdecode(buf, cv2.IMREAD_COLOR)
    if img is None:
        raise CorruptEpisodeError(where, f'cannot decode compressed image ({msg.format!r})',
                                  recoverable=False)
    return np.ascontiguousarray(img[:, :, ::-1])
