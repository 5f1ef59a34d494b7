"""Action consistency: does the generated video move where the ground truth moves?

Both videos are real-looking, so the tracker is appearance-agnostic: a pixel is "moving
foreground" (arm, gripper, manipulated object) where it differs from that video's own temporal
median background. Per frame we compare the foreground centroid (pixel error) and the
foreground masks (IoU) of generated vs ground-truth frames. Where the ground truth is the bench
lab's (it knows where each object is), ``evaluation.positions`` tracks the objects themselves.
"""

from __future__ import annotations

import cv2
import numpy as np

from ..errors import InputShapeError


def foreground_masks(frames: np.ndarray, threshold: float = 30.0) -> np.ndarray:
    """(T, H, W) bool: pixels farther than ``threshold`` (L1 over RGB) from the median frame.

    Frames are blurred first so sensor noise (and diffusion grain) does not count as motion.
    """
    k = max(3, (min(frames.shape[1:3]) // 16) | 1)
    x = np.stack([cv2.GaussianBlur(f.astype(np.float32), (k, k), 0) for f in frames])
    bg = np.median(x, axis=0)
    return np.abs(x - bg[None]).sum(-1) > threshold


def motion_centroids(frames: np.ndarray, threshold: float = 30.0) -> np.ndarray:
    """(T, 2) foreground centroid (x, y) in pixels per frame; NaN where nothing moves."""
    masks = foreground_masks(frames, threshold)
    h, w = masks.shape[1:]
    yy, xx = np.mgrid[0:h, 0:w]
    out = np.full((len(masks), 2), np.nan)
    for k, m in enumerate(masks):
        n = m.sum()
        if n:
            out[k] = (xx[m].sum() / n, yy[m].sum() / n)
    return out


def action_consistency(generated: np.ndarray, truth: np.ndarray, threshold: float = 30.0
                       ) -> dict[str, float]:
    """Centroid pixel error (mean over frames where both move) and mean foreground IoU.

    A frame where only one of the videos moves counts as the image diagonal (worst case), so a
    video that freezes or hallucinates motion cannot score well.
    """
    if generated.shape != truth.shape:
        raise InputShapeError(f'generated {generated.shape} and ground truth {truth.shape} '
                              f'differ in shape')
    cg, ct = motion_centroids(generated, threshold), motion_centroids(truth, threshold)
    diag = float(np.hypot(*generated.shape[1:3]))
    both = ~np.isnan(cg[:, 0]) & ~np.isnan(ct[:, 0])
    one = np.isnan(cg[:, 0]) ^ np.isnan(ct[:, 0])
    err = np.concatenate([np.hypot(*(cg[both] - ct[both]).T), np.full(one.sum(), diag)])
    mg, mt = foreground_masks(generated, threshold), foreground_masks(truth, threshold)
    inter, union = (mg & mt).sum((1, 2)), (mg | mt).sum((1, 2))
    iou = np.where(union > 0, inter / np.maximum(union, 1), 1.0)
    return {'centroid_px': float(err.mean()) if err.size else 0.0, 'mask_iou': float(iou.mean())}
