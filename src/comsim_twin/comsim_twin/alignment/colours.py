"""Colours: the scene's exposure/white balance from the table, per-pixel colour labels, and
object colours mapped to sim material RGB.

The camera multiplies every surface's reflectance by one unknown per-channel gain (exposure,
white balance, lighting). The table's colour is on the lab's sheet (the one reference the lab
measured), so gain = observed table colour / sheet table colour; dividing any robust pixel
colour by that gain gives a reflectance-like RGB in [0, 1], which is what a sim material takes.
"""
from __future__ import annotations

import numpy as np

_EPS = 1e-6
# Clutter colours that are never an object (arm links, gripper, dark gaps): labelled, not used.
CLUTTER = {'_grey': (0.35, 0.35, 0.35), '_dark': (0.08, 0.08, 0.08)}


def exposure_gain(table_rgb: np.ndarray, table_reference: np.ndarray) -> np.ndarray:
    """Per-channel gain (0-255 pixel units per unit reflectance) from the table."""
    ref = np.clip(np.asarray(table_reference, float), 0.02, 1.0)
    return np.maximum(np.asarray(table_rgb, float), 1.0) / ref


def to_reflectance(rgb: np.ndarray, gain: np.ndarray) -> np.ndarray:
    """Pixel RGB (0-255) -> sim material RGB (0-1) under the estimated gain."""
    return np.clip(np.asarray(rgb, float) / gain, 0.0, 1.0)


def _chroma(rgb: np.ndarray) -> np.ndarray:
    rgb = np.asarray(rgb, float)
    return rgb[..., :2] / (rgb.sum(axis=-1, keepdims=True) + _EPS)


def colour_distance(rgb: np.ndarray, reference: np.ndarray, shade_tolerance: float = 2.2,
                    brightness_weight: float = 0.15) -> np.ndarray:
    """Shading-tolerant distance between reflectance-like colours (any leading shape).

    Chromaticity distance, plus a brightness term that is zero within a factor of
    shade_tolerance (faces of one object differ by shading) and grows in log units beyond,
    which separates white from grey and black.
    """
    rgb = np.asarray(rgb, float)
    ref = np.asarray(reference, float)
    d = np.linalg.norm(_chroma(rgb) - _chroma(ref), axis=-1)
    ratio = np.log((rgb.sum(axis=-1) + 0.03) / (ref.sum() + 0.03))
    excess = np.maximum(np.abs(ratio) - np.log(shade_tolerance), 0.0)
    return d + brightness_weight * excess


def label_pixels(reflectance: np.ndarray, palette: dict[str, tuple[float, float, float]]
                 ) -> tuple[np.ndarray, list[str]]:
    """Index of the nearest palette colour per pixel (palette plus the clutter colours)."""
    names = list(palette) + list(CLUTTER)
    refs = [palette[n] for n in palette] + [CLUTTER[n] for n in CLUTTER]
    dist = np.stack([colour_distance(reflectance, r) for r in refs], axis=-1)
    return np.argmin(dist, axis=-1), names


def rgb_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Euclidean RGB distance (0-1 units): the colour error we report."""
    return float(np.linalg.norm(np.asarray(a, float) - np.asarray(b, float)))


def delta_e76(a: np.ndarray, b: np.ndarray) -> float:
    """CIE76 ΔE between two sRGB colours in [0, 1]."""
    return float(np.linalg.norm(_lab(np.asarray(a, float)) - _lab(np.asarray(b, float))))


def _lab(rgb: np.ndarray) -> np.ndarray:
    lin = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    M = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
    xyz = M @ lin / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])
