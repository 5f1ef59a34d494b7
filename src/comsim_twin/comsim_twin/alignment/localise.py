"""Where each object is: a first estimate from its masks, refined by render-and-compare.

First estimate: each camera's mask centroid is back-projected as a ray; the point on the plane
z = half-height (a resting object's centre) closest to all rays is the position (one camera:
the ray-plane intersection). Yaw: the orientation of the mask's pixels back-projected onto the
object's top plane (cv2.minAreaRect). Refinement: coarse-to-fine pattern search over x, y, yaw
maximising the mean mask IoU across cameras between observed and rendered silhouettes.
"""
from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from comsim_twin.alignment.geometry import (
    camera_centre,
    fuse_rays_on_plane,
    pixel_rays,
    pixels_to_plane,
)
from comsim_twin.alignment.sheet import SheetObject
from comsim_twin.alignment.silhouettes import SilhouetteRenderer
from comsim_twin.scene import TwinCamera


@dataclass
class Pose2D:
    x: float
    y: float
    yaw: float


def yaw_period(obj: SheetObject) -> float:
    """Yaw symmetry of the shape: 0 = any yaw (round), pi/2 square box, pi box."""
    if obj.shape != 'box':
        return 0.0
    hx, hy = obj.size[:2]
    return np.pi / 2 if abs(hx - hy) < 0.1 * max(hx, hy) else np.pi


def wrap_yaw(yaw: float, period: float) -> float:
    """Yaw into [-period/2, period/2) (period 0: 0)."""
    if period <= 0:
        return 0.0
    return float((yaw + period / 2) % period - period / 2)


def initial_position(cams: list[TwinCamera], masks: list[np.ndarray],
                     z: float) -> np.ndarray:
    """(x, y) closest to every camera's mask-centroid ray on the plane Z = z."""
    centres, rays, weights = [], [], []
    for cam, m in zip(cams, masks):
        v, u = np.nonzero(m)
        rays.append(pixel_rays(cam, np.array([[u.mean(), v.mean()]]))[0])
        centres.append(camera_centre(cam))
        weights.append(float(np.sqrt(m.sum())))
    return fuse_rays_on_plane(centres, rays, z, weights)


def initial_yaw(cams: list[TwinCamera], masks: list[np.ndarray], obj: SheetObject) -> float:
    """Orientation of the mask back-projected onto the object's top plane (boxes only)."""
    period = yaw_period(obj)
    if period == 0:
        return 0.0
    best, best_area = 0.0, -1.0
    for cam, m in zip(cams, masks):
        v, u = np.nonzero(m)
        pts = pixels_to_plane(cam, np.c_[u, v].astype(float), 2 * obj.half_height)[:, :2]
        pts = pts[np.isfinite(pts).all(axis=1)].astype(np.float32)
        if len(pts) < 5:
            continue
        (_, _), (w, h), ang = cv2.minAreaRect(pts)
        yaw = np.deg2rad(ang) if w >= h else np.deg2rad(ang) + np.pi / 2
        if obj.size[0] < obj.size[1]:
            yaw += np.pi / 2
        if m.sum() > best_area:        # the camera that sees the object largest decides
            best, best_area = wrap_yaw(yaw, period), float(m.sum())
    return best


def iou(a: np.ndarray, b: np.ndarray) -> float:
    union = np.logical_or(a, b).sum()
    return float(np.logical_and(a, b).sum() / union) if union else 0.0


def refine(renderer: SilhouetteRenderer, cams: list[TwinCamera], masks: list[np.ndarray],
           obj: SheetObject, start: Pose2D, step_xy: float = 0.008, min_step_xy: float = 0.0005,
           step_yaw: float = 0.25, max_evals: int = 400) -> tuple[Pose2D, float, int]:
    """Pattern search (coarse-to-fine) maximising the mean IoU across cameras.

    Each round tries +-step along x, y and yaw from the best pose, moving while any helps, and
    halves the steps when none does, down to min_step_xy. Returns the pose, its IoU and the
    number of renders per camera.
    """
    period = yaw_period(obj)

    def score(p: Pose2D) -> float:
        return float(np.mean([iou(renderer.mask(c, obj, p.x, p.y, p.yaw), m)
                              for c, m in zip(cams, masks)]))

    best = Pose2D(start.x, start.y, wrap_yaw(start.yaw, period))
    best_s = score(best)
    evals = 1
    if period > 0:   # coarse yaw sweep first: the mask orientation can be a quarter turn off
        for yaw in np.linspace(-period / 2, period / 2, 8, endpoint=False):
            cand = Pose2D(best.x, best.y, float(yaw))
            s = score(cand)
            evals += 1
            if s > best_s:
                best, best_s = cand, s
        step_yaw = min(step_yaw, period / 16)
    while step_xy >= min_step_xy and evals < max_evals:
        improved = False
        moves = [(step_xy, 0, 0), (-step_xy, 0, 0), (0, step_xy, 0), (0, -step_xy, 0)]
        if period > 0:
            moves += [(0, 0, step_yaw), (0, 0, -step_yaw)]
        for dx, dy, dyaw in moves:
            cand = Pose2D(best.x + dx, best.y + dy, wrap_yaw(best.yaw + dyaw, period))
            s = score(cand)
            evals += 1
            if s > best_s + 1e-9:
                best, best_s, improved = cand, s, True
        if not improved:
            step_xy /= 2
            step_yaw /= 2
    return best, best_s, evals
