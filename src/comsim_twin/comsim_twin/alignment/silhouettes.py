"""Silhouette renderers for render-and-compare: the twin backend, or an analytic projection.

Both draw an object's mask through the calibrated camera (lens distortion included) for a
candidate pose. The backend version is the twin itself (occlusion by the arm and by other
objects included); the projected version is the convex hull of the object's projected surface
samples (exact for convex shapes up to distortion bending the edges between samples), about a
hundred times faster and independent of any renderer.
"""
from __future__ import annotations

from typing import Protocol

import cv2
import numpy as np

from comsim_core.geometry import yaw_quat
from comsim_twin.alignment.geometry import project
from comsim_twin.alignment.sheet import SheetObject
from comsim_twin.scene import TwinCamera, TwinObject, TwinScene


class SilhouetteRenderer(Protocol):
    name: str

    def mask(self, cam: TwinCamera, obj: SheetObject, x: float, y: float,
             yaw: float) -> np.ndarray:
        """Bool HxW mask of obj resting on the table at (x, y, yaw), seen by cam."""


def surface_points(obj: SheetObject, x: float, y: float, yaw: float,
                   samples: int = 24) -> list[np.ndarray]:
    """Convex parts of the object as (N, 3) base-frame point sets (bottle: body, neck)."""
    c, s = np.cos(yaw), np.sin(yaw)
    R = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    centre = np.array([x, y, obj.half_height])
    parts = []
    if obj.shape == 'box':
        hx, hy, hz = obj.size
        t = np.linspace(-1.0, 1.0, 7)
        pts = []
        for a in (-1, 1):
            for b in (-1, 1):   # the 12 edges, sampled so distortion bends them
                pts.append(np.stack([t * hx, np.full_like(t, a * hy), np.full_like(t, b * hz)], 1))
                pts.append(np.stack([np.full_like(t, a * hx), t * hy, np.full_like(t, b * hz)], 1))
                pts.append(np.stack([np.full_like(t, a * hx), np.full_like(t, b * hy), t * hz], 1))
        parts.append(np.concatenate(pts))
    else:
        r, h = obj.size
        parts.append(_cylinder(r, -h, h, samples))
        if obj.neck is not None:
            nr, nh = obj.neck
            parts.append(_cylinder(nr, h, h + 2 * nh, samples))
    return [p @ R.T + centre for p in parts]


def _cylinder(r: float, z0: float, z1: float, samples: int) -> np.ndarray:
    a = np.linspace(0.0, 2 * np.pi, samples, endpoint=False)
    ring = np.stack([r * np.cos(a), r * np.sin(a)], 1)
    return np.concatenate([np.c_[ring, np.full(samples, z)] for z in (z0, z1)])


class ProjectedSilhouettes:
    """Analytic masks: convex hull of each projected part."""
    name = 'projection'

    def mask(self, cam: TwinCamera, obj: SheetObject, x: float, y: float,
             yaw: float) -> np.ndarray:
        out = np.zeros((cam.height, cam.width), np.uint8)
        for part in surface_points(obj, x, y, yaw):
            uv = project(cam, part)
            hull = cv2.convexHull(np.round(uv * 4).astype(np.int32))
            cv2.fillConvexPoly(out, hull, 1, lineType=cv2.LINE_8, shift=2)
        return out.astype(bool)


class BackendSilhouettes:
    """Masks rendered by the twin backend (backend.render_segmentation) for a candidate pose.

    The backend is built once with every object at its first estimate; each call moves one
    object (set_object_pose) and renders the segmentation of that camera.
    """
    name = 'backend'

    def __init__(self, backend, scene: TwinScene):
        self.backend = backend
        backend.build(scene)

    def mask(self, cam: TwinCamera, obj: SheetObject, x: float, y: float,
             yaw: float) -> np.ndarray:
        self.backend.set_object_pose(obj.name, np.array([x, y, obj.half_height]),
                                     yaw_quat(yaw))
        masks = self.backend.render_segmentation(cam.name)
        m = masks.get(obj.name)
        if m is None:
            return np.zeros((cam.height, cam.width), bool)
        return np.asarray(m, bool)


def twin_object(obj: SheetObject, x: float, y: float, yaw: float,
                colour: list[float]) -> TwinObject:
    """The TwinObject for a sheet object resting on the table at (x, y, yaw)."""
    size = list(obj.size)
    if obj.shape == 'bottle' and obj.neck is not None:
        size += list(obj.neck)       # the twin's bottle: radius, half-height, neck r, neck hh
    return TwinObject(obj.name, obj.shape, size, [float(c) for c in colour],
                      [float(x), float(y), float(obj.half_height)], yaw_quat(yaw).tolist())
