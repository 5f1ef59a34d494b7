"""Objects against table and background: a robust table-colour model and connected components.

The table is textured, shaded and seen through an unknown exposure/white balance, so its
model is learnt from the image itself: the chromaticity (r, g) = (R, G) / (R + G + B) of the
pixels inside the table's projected outline, summarised by a median and a MAD-scaled covariance
(the objects cover a few percent of the table, so they barely move either). Chromaticity ignores
shading, so shadows stay table; an object differs in chromaticity (coloured objects) or, for
neutral ones such as a white card, in being brighter than almost all of the table.
"""
from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from comsim_twin.alignment.geometry import project
from comsim_twin.scene import TwinCamera

_EPS = 1e-6


@dataclass(frozen=True)
class TableModel:
    """Robust colour statistics of the visible table: one chromaticity cluster per tone."""
    means: np.ndarray              # (k, 2) chromaticity of each table tone
    inv_covs: np.ndarray           # (k, 2, 2)
    bright_hi: float               # brightness (R+G+B) high quantile of the table
    colour_median: np.ndarray      # (3,) RGB 0-255, the table's robust colour


@dataclass
class Blob:
    """One connected component of foreground pixels."""
    mask: np.ndarray               # bool HxW
    area: int
    centroid: np.ndarray           # (u, v)
    colour: np.ndarray             # (3,) robust RGB 0-255


def chromaticity(image: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(H, W, 2) chromaticity and (H, W) brightness R+G+B of an RGB uint8 image."""
    img = image.astype(np.float32)
    s = img.sum(axis=2)
    return img[..., :2] / (s[..., None] + _EPS), s


def table_roi(cam: TwinCamera, half_size: tuple[float, float], center: tuple[float, float],
              margin: float = 0.02, samples: int = 40) -> np.ndarray:
    """Pixels whose ray meets the table top (the outline densely projected, lens included)."""
    hx, hy = half_size[0] - margin, half_size[1] - margin
    t = np.linspace(-1.0, 1.0, samples)
    one = np.ones_like(t)
    edges = [np.stack([t * hx, -hy * one], 1), np.stack([hx * one, t * hy], 1),
             np.stack([-t * hx, hy * one], 1), np.stack([-hx * one, -t * hy], 1)]
    xy = np.concatenate(edges) + np.asarray(center, float)
    uv = project(cam, np.concatenate([xy, np.zeros((len(xy), 1))], axis=1))
    mask = np.zeros((cam.height, cam.width), np.uint8)
    cv2.fillPoly(mask, [np.round(uv).astype(np.int32)], 1)
    return mask.astype(bool)


def fit_table(image: np.ndarray, roi: np.ndarray, tones: int = 3,
              min_share: float = 0.1) -> TableModel:
    """Cluster the table's chromaticity into tones (k-means); a robust covariance per tone.

    Tones with under min_share of the pixels are dropped, so an object, however large, can
    never become part of the table model.
    """
    chroma, bright = chromaticity(image)
    usable = roi & (bright > 60)
    if usable.sum() < 200:
        raise ValueError('too few table pixels to model the table colour '
                         f'({int(usable.sum())} in view): is the calibration right?')
    c = chroma[usable].astype(np.float32)
    crit = (cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_MAX_ITER, 30, 1e-4)
    cv2.setRNGSeed(0)
    _, labels, _ = cv2.kmeans(c, tones, None, crit, 3, cv2.KMEANS_PP_CENTERS)
    labels = labels.ravel()
    means, inv_covs = [], []
    for k in range(tones):
        ck = c[labels == k].astype(np.float64)
        if len(ck) < min_share * len(c):
            continue
        med = np.median(ck, axis=0)
        r = np.linalg.norm(ck - med, axis=1)
        core = ck[r <= np.quantile(r, 0.9)]
        cov = np.cov(core.T) + np.eye(2) * 1e-5
        means.append(med)
        inv_covs.append(np.linalg.inv(cov))
    b = bright[usable]
    return TableModel(np.array(means), np.array(inv_covs), float(np.quantile(b, 0.98)),
                      np.median(image[usable].astype(np.float64), axis=0))


def table_distance(image: np.ndarray, table: TableModel) -> tuple[np.ndarray, np.ndarray,
                                                                   np.ndarray]:
    """Per pixel: Mahalanobis and Euclidean chromaticity distance to the nearest table tone."""
    chroma, bright = chromaticity(image)
    maha = np.full(chroma.shape[:2], np.inf)
    eucl = np.full(chroma.shape[:2], np.inf)
    for mean, inv in zip(table.means, table.inv_covs):
        dev = chroma - mean
        maha = np.minimum(maha, np.einsum('...i,ij,...j->...', dev, inv, dev))
        eucl = np.minimum(eucl, np.linalg.norm(dev, axis=-1))
    return np.sqrt(maha), eucl, bright


def foreground(image: np.ndarray, table: TableModel, roi: np.ndarray,
               sigmas: float = 2.5, min_chroma: float = 0.04,
               bright_factor: float = 1.12) -> np.ndarray:
    """Pixels that are not table: far from every table tone's chromaticity, or brighter than
    nearly all the table (neutral objects)."""
    maha, eucl, bright = table_distance(image, table)
    fg = (maha > sigmas) & (eucl > min_chroma) & (bright > 45)
    fg |= bright > table.bright_hi * bright_factor
    fg &= roi
    fg = cv2.morphologyEx(fg.astype(np.uint8), cv2.MORPH_OPEN, np.ones((2, 2), np.uint8))
    fg = cv2.morphologyEx(fg, cv2.MORPH_CLOSE, np.ones((3, 3), np.uint8))
    return fg.astype(bool)


def blobs(mask: np.ndarray, image: np.ndarray, min_area: int = 12) -> list[Blob]:
    """Connected components (8-connected) of a foreground mask, largest first."""
    n, labels, stats, cents = cv2.connectedComponentsWithStats(mask.astype(np.uint8), 8)
    out = []
    for i in range(1, n):
        area = int(stats[i, cv2.CC_STAT_AREA])
        if area < min_area:
            continue
        m = labels == i
        out.append(Blob(m, area, cents[i].copy(), robust_colour(image, m)))
    out.sort(key=lambda b: -b.area)
    return out


def robust_colour(image: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Median RGB over the mask's interior (eroded so blurred edges do not mix in the table)."""
    inner = cv2.erode(mask.astype(np.uint8), np.ones((3, 3), np.uint8)).astype(bool)
    use = inner if inner.sum() >= 6 else mask
    return np.median(image[use].astype(np.float64), axis=0)
