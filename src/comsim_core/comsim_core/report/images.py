"""Picture helpers for reports: labelled tiles and grids, written as PNG."""
from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np


def label(img: np.ndarray, text: str, scale: float = 0.4) -> np.ndarray:
    """A copy of an RGB image with `text` on a dark band at the top."""
    out = np.ascontiguousarray(img.copy())
    h = int(14 * scale / 0.4)
    out[:h] = (out[:h] * 0.35).astype(np.uint8)
    cv2.putText(out, text, (3, h - 4), cv2.FONT_HERSHEY_SIMPLEX, scale, (255, 255, 255), 1,
                cv2.LINE_AA)
    return out


def fit(img: np.ndarray, height: int) -> np.ndarray:
    """Resize to a given height, keeping the aspect ratio."""
    h, w = img.shape[:2]
    if h == height:
        return img
    return cv2.resize(img, (max(1, round(w * height / h)), height), interpolation=cv2.INTER_AREA)


def grid(rows: list[list[np.ndarray]], pad: int = 2, height: int | None = None) -> np.ndarray:
    """Tile RGB images row by row (each row resized to one height), white padding."""
    height = height or max(img.shape[0] for row in rows for img in row)
    built = []
    for row in rows:
        tiles = [fit(img, height) for img in row]
        parts = []
        for tile in tiles:
            parts += [tile, np.full((height, pad, 3), 255, np.uint8)]
        built.append(np.concatenate(parts[:-1], axis=1))
    width = max(r.shape[1] for r in built)
    padded = []
    for r in built:
        r = np.pad(r, ((0, 0), (0, width - r.shape[1]), (0, 0)), constant_values=255)
        padded += [r, np.full((pad, width, 3), 255, np.uint8)]
    return np.concatenate(padded[:-1], axis=0)


def save_png(path: Path, rgb: np.ndarray) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not cv2.imwrite(str(path), cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR)):
        raise OSError(f'could not write {path}')
    return path
