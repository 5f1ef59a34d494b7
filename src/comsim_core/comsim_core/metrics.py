"""Image similarity between real and twin frames (PSNR, SSIM) and side-by-side pictures.

Pure numpy/OpenCV so the gap report runs wherever the twin runs (no scikit-image here).
SSIM follows Wang et al. 2004: an 11x11 Gaussian window (sigma 1.5), K1 = 0.01, K2 = 0.03,
computed per colour channel and averaged, as scikit-image does with ``gaussian_weights=True``.
"""
from __future__ import annotations

import cv2
import numpy as np

_K1, _K2 = 0.01, 0.03
_SIGMA = 1.5
_WINDOW = 11


def _check_pair(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        raise ValueError(f'images differ in shape: {a.shape} vs {b.shape}')
    if a.ndim not in (2, 3) or a.size == 0:
        raise ValueError(f'expected an HxW or HxWxC image, got shape {a.shape}')
    return a.astype(np.float64), b.astype(np.float64)


def psnr(a: np.ndarray, b: np.ndarray, data_range: float = 255.0) -> float:
    """Peak signal-to-noise ratio in dB; ``inf`` for identical images."""
    a, b = _check_pair(a, b)
    mse = float(np.mean((a - b) ** 2))
    if mse == 0.0:
        return float('inf')
    return float(10.0 * np.log10(data_range ** 2 / mse))


def _blur(x: np.ndarray) -> np.ndarray:
    return cv2.GaussianBlur(x, (_WINDOW, _WINDOW), _SIGMA, borderType=cv2.BORDER_REFLECT)


def ssim_map(a: np.ndarray, b: np.ndarray, data_range: float = 255.0) -> np.ndarray:
    """Per-pixel SSIM of two single-channel float images (same shape)."""
    c1, c2 = (_K1 * data_range) ** 2, (_K2 * data_range) ** 2
    mu_a, mu_b = _blur(a), _blur(b)
    var_a = _blur(a * a) - mu_a ** 2
    var_b = _blur(b * b) - mu_b ** 2
    cov = _blur(a * b) - mu_a * mu_b
    num = (2 * mu_a * mu_b + c1) * (2 * cov + c2)
    den = (mu_a ** 2 + mu_b ** 2 + c1) * (var_a + var_b + c2)
    return num / den


def ssim(a: np.ndarray, b: np.ndarray, data_range: float = 255.0) -> float:
    """Mean structural similarity in [-1, 1] (1 = identical), averaged over channels.

    The border where the window does not fit is left out, as in the reference implementation.
    """
    a, b = _check_pair(a, b)
    if min(a.shape[:2]) < _WINDOW:
        raise ValueError(f'images must be at least {_WINDOW}x{_WINDOW} for SSIM, got '
                         f'{a.shape[:2]}')
    if a.ndim == 2:
        a, b = a[..., None], b[..., None]
    pad = (_WINDOW - 1) // 2
    values = [ssim_map(a[..., c], b[..., c], data_range)[pad:-pad, pad:-pad].mean()
              for c in range(a.shape[2])]
    return float(np.mean(values))


def abs_diff(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b| as uint8, same shape (bright = different)."""
    if np.shape(a) != np.shape(b):
        raise ValueError(f'images differ in shape: {np.shape(a)} vs {np.shape(b)}')
    return cv2.absdiff(np.asarray(a, np.uint8), np.asarray(b, np.uint8))


def comparison_row(real: np.ndarray, twin: np.ndarray, gap: int = 2) -> np.ndarray:
    """One row ``real | twin | |real - twin|`` separated by ``gap`` white pixels."""
    diff = abs_diff(real, twin)
    h = real.shape[0]
    sep = np.full((h, gap, 3), 255, np.uint8)
    return np.concatenate([_rgb(real), sep, _rgb(twin), sep, _rgb(diff)], axis=1)


def stack_rows(rows: list[np.ndarray], gap: int = 2) -> np.ndarray:
    """Rows of possibly different widths stacked vertically on a white background."""
    if not rows:
        raise ValueError('no rows to stack')
    width = max(r.shape[1] for r in rows)
    out = []
    for i, row in enumerate(rows):
        if i:
            out.append(np.full((gap, width, 3), 255, np.uint8))
        padded = np.full((row.shape[0], width, 3), 255, np.uint8)
        padded[:, :row.shape[1]] = row
        out.append(padded)
    return np.concatenate(out, axis=0)


def save_png(path, image: np.ndarray) -> None:
    """Write an RGB uint8 image as PNG (OpenCV wants BGR)."""
    if not cv2.imwrite(str(path), np.ascontiguousarray(_rgb(image)[:, :, ::-1])):
        raise OSError(f'could not write {path}')


def _rgb(image: np.ndarray) -> np.ndarray:
    image = np.asarray(image, np.uint8)
    return np.repeat(image[..., None], 3, axis=2) if image.ndim == 2 else image
