"""Where things truly are in each ground-truth frame (``positions.json``): projected centres,
visible pixels from a segmentation render, and colour models, so the neural simulator's
evaluation finds the objects in translated frames without the bench lab."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from comsim_bench_lab.lab import BenchLab
from comsim_bench_lab.scene import ROBOT_PREFIX
from comsim_core.camera import project_points

POSITIONS_FILE = 'positions.json'
POSITIONS_FORMAT = 'comsim-ground-truth-positions/1'
GRIPPER = 'gripper'                             # its entry in positions.json, beside the objects
GRIPPER_BODIES = ('finger_left', 'finger_right')  # what is seen of it: the finger pads
TCP_SITE = 'tcp'                                # the robot model's centre between the pads
MIN_COLOR_PIXELS = 4       # interior pixels below which the mask's edge pixels count too
COLOR_SAMPLES = 32         # pixel colours recorded per object and frame (its colour model)


@dataclass
class Tracked:
    """Something whose image position is recorded: its geoms, and the body or site whose origin
    is its centre (an object's body; the gripper's TCP site)."""

    name: str
    geoms: np.ndarray
    body: int | None = None
    site: int | None = None


def tracked(lab: BenchLab) -> list[Tracked]:
    """The lab's objects, then the gripper (its finger pads, centred on the TCP) when the arm
    has those (another arm's MJCF may not: its gripper is then not recorded)."""
    model = lab.model
    items = [Tracked(n, np.flatnonzero(model.geom_bodyid == model.body(n).id),
                     body=model.body(n).id) for n in lab.objects]
    try:
        fingers = [model.body(ROBOT_PREFIX + n).id for n in GRIPPER_BODIES]
        tcp = model.site(ROBOT_PREFIX + TCP_SITE).id
    except KeyError:
        return items
    items.append(Tracked(GRIPPER, np.flatnonzero(np.isin(model.geom_bodyid, fingers)), site=tcp))
    return items


def _labels(lab: BenchLab, camera: str, items: list[Tracked]) -> np.ndarray:
    """(H, W) uint16: 1 + index into ``items`` of the geom seen at each pixel (0: other), through
    the same lens path as ``BenchLab.render`` (distorted when the realism profile distorts)."""
    lut = np.zeros(lab.model.ngeom + 1, np.uint16)      # id -1 (nothing) reads the last entry
    for i, item in enumerate(items):
        lut[item.geoms] = i + 1
    return lut[lab.render_geom_ids(camera)]


def _corners(lab: BenchLab, geoms: np.ndarray) -> np.ndarray:
    """(8 n, 3) world corners of the geoms' bounding boxes (their projection: the image box)."""
    signs = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    m, d = lab.model, lab.data
    return np.concatenate([d.geom_xpos[g] + (m.geom_aabb[g, :3] + signs * m.geom_aabb[g, 3:])
                           @ d.geom_xmat[g].reshape(3, 3).T for g in geoms])


def colour_model(image: np.ndarray, mask: np.ndarray, median: bool = False
                 ) -> tuple[list[float] | None, list[list[int]] | None]:
    """Colour of ``image`` over ``mask`` (mean, or ``median`` for frames that may sit a pixel or
    two off the mask: the twin's) and up to ``COLOR_SAMPLES`` of its pixels' colours.

    The samples let a tracker accept the object's shaded faces without accepting another hue as
    dark or as bright (one mean colour cannot). Only the mask's interior counts when it has a
    few pixels (blur mixes the edge pixels with the background); samples leave out the tenth
    farthest from the centre (highlights, background where the frame is off) and are spread
    evenly over the rest by brightness.
    """
    inner = cv2.erode(mask.astype(np.uint8), np.ones((3, 3), np.uint8)).astype(bool)
    px = image[inner if inner.sum() >= MIN_COLOR_PIXELS else mask].astype(float)
    if not len(px):
        return None, None
    centre = np.median(px, 0) if median else px.mean(0)
    d = np.linalg.norm(px - centre, axis=1)
    core = px[d <= np.percentile(d, 90)]
    core = core[np.argsort(core.sum(1), kind='stable')]
    pick = np.unique(np.linspace(0, len(core) - 1, min(COLOR_SAMPLES, len(core))).round())
    return ([round(float(c), 1) for c in centre],
            core[pick.astype(int)].round().astype(int).tolist())


def frame_positions(lab: BenchLab, camera: str, items: list[Tracked], truth: np.ndarray,
                    sim: np.ndarray | None = None) -> dict[str, Any]:
    """Where each item truly is in ``camera``'s frame now (``truth``: that frame).

    Per item: ``uv`` its centre projected through the calibrated camera (distortion as
    rendered), ``box`` the projection's extent, ``in_image``; ``pixels`` how many pixels show it
    (segmentation: occlusion counts), their ``centroid``, ``color``/``color_samples`` of the
    truth frame over them and ``sim_color``/``sim_color_samples`` of the twin's (``colour_model``).
    """
    cal = lab.camera_info(camera)
    dist = cal.D if lab.realism is not None and lab.realism.distortion else None
    labels = _labels(lab, camera, items)
    h, w = labels.shape
    out: dict[str, Any] = {'objects': {}}
    for i, item in enumerate(items):
        centre = (lab.data.xpos[item.body] if item.body is not None
                  else lab.data.site_xpos[item.site])
        uv = project_points(np.vstack([centre, _corners(lab, item.geoms)]), cal.K, dist,
                            cal.T_base_camera)
        mask = labels == i + 1
        ys, xs = np.nonzero(mask)
        colour, samples = colour_model(truth, mask)
        sim_colour, sim_samples = (None, None) if sim is None else colour_model(sim, mask, True)
        entry = {'uv': _round(uv[0]), 'box': _round([*uv[1:].min(0), *uv[1:].max(0)]),
                 'in_image': bool(-0.5 <= uv[0, 0] < w - 0.5 and -0.5 <= uv[0, 1] < h - 0.5),
                 'pixels': int(xs.size),
                 'centroid': _round([xs.mean(), ys.mean()]) if xs.size else None,
                 'color': colour, 'color_samples': samples, 'sim_color': sim_colour,
                 'sim_color_samples': sim_samples}
        if item.name == GRIPPER and item.site is not None:
            out[GRIPPER] = entry
        else:
            out['objects'][item.name] = entry
    return out


def _round(values: Any) -> list[float]:
    return [round(float(v), 2) for v in values]
