"""Frame stacks as JPEG bytes, for packs that travel to and from the GPU machine (the device
tool carries 64 MiB a call; rendered frames barely compress losslessly)."""
from __future__ import annotations

import cv2
import numpy as np


def encode_jpeg(frames: np.ndarray, quality: int) -> tuple[np.ndarray, np.ndarray]:
    """(N, H, W, 3) RGB -> (all JPEG bytes concatenated, per-frame byte counts)."""
    blobs = []
    for frame in frames:
        ok, buf = cv2.imencode('.jpg', np.ascontiguousarray(frame[..., ::-1]),
                               [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
        if not ok:
            raise RuntimeError('cv2.imencode failed on a frame')
        blobs.append(buf.reshape(-1))
    return np.concatenate(blobs), np.array([b.size for b in blobs], dtype=np.int64)


def decode_jpeg(data: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Inverse of ``encode_jpeg``: (N, H, W, 3) RGB uint8."""
    ends = np.cumsum(sizes)
    frames = [cv2.imdecode(data[end - n:end], cv2.IMREAD_COLOR)[..., ::-1]
              for n, end in zip(sizes, ends, strict=True)]
    return np.ascontiguousarray(np.stack(frames))
