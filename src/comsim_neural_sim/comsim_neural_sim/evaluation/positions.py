"""Action consistency against ground truth: are the objects where the bench lab filmed them?

The bench lab's ground-truth episodes carry ``positions.json`` (``comsim-bench-lab-ground-truth``
writes it): per camera and frame stamp, each object's visible-pixel ``centroid`` (segmentation),
its projected extent ``box``, the mean ``color`` of the ground-truth frame over it and a few of
those pixels' colours, ``color_samples`` (``sim_color``/``sim_color_samples``: the twin's frame
over the same pixels, median: its camera may sit a pixel or two off). Only that file is read;
the bench lab is never imported.

An object is looked for by colour: in a window ``WINDOW`` times its projected box around the
true centroid (a distractor far away does not count), the pixels within ``COLOR_TOL`` (RGB
distance) of one of its colour samples (its shaded faces pass, a dark grey gripper next to a
dark red side does not; one mean colour could not tell them apart). Samples darker than ``DARK``
in every channel are dropped unless most are that dark (a dark object): near black has no hue,
so a shadowed face would accept the gripper and the shadows. Found when one connected blob of
those pixels has ``MIN_FOUND`` of what the ground truth shows (scattered pixels of a noisy
frame do not make an object); the error is the distance (px) from the true centroid of the
centroid of the blobs at least ``SPECK`` of the largest (a finger may split the object).
Translated frames use the lab's colour (a translation is asked to look like the lab, so the lab's
colour is the right model); the twin's own frames (the floor) use the twin's colour, else the
floor would score the appearance gap instead of the geometry. The tracker run on the ground
truth itself shows its own bias (``truth``). Frames where the ground truth shows fewer than
``MIN_PIXELS`` of an object are not scored for it. Read error and found fraction together: a
washed-out translation may hold a blob of a white card's colour near it (found, far off).

The gripper is recorded but not scored: it is dark grey like the palm, the wrist and the
shadows, and the same tracker put it a median 6 px (up to 21) off on the ground truth itself
(96 frames of 3 main-job episodes, 320x240), against 0.7 px for the objects.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import cv2
import numpy as np

POSITIONS_FILE = 'positions.json'
WINDOW = 3.0          # search window: this many times the object's projected box
COLOR_TOL = 20.0      # RGB distance to a colour sample still accepted (noise, grain, blur)
DARK = 40             # samples below this in every channel carry no colour (see module doc)
MIN_FOUND = 0.25      # found: at least this fraction of the ground truth's visible pixels
MIN_PIXELS = 4        # the ground truth shows fewer: the frame is not scored for that object
SPECK = 0.1           # blobs smaller than this fraction of the largest are noise
COLOURS = {'translated': 'color', 'sim': 'sim_color', 'truth': 'color'}


def load_positions(episode: str | Path) -> dict | None:
    """``positions.json`` of a ground-truth episode (None when it has none: an older render)."""
    path = Path(episode) / POSITIONS_FILE
    return json.loads(path.read_text()) if path.is_file() else None


def find_object(frame: np.ndarray, entry: Mapping, colour_key: str = 'color'
                ) -> np.ndarray | None:
    """Centroid (x, y) of the object's colour near its true position in ``frame``; None when
    it is not there (see module doc)."""
    colour = entry.get(colour_key)
    if colour is None or entry.get('centroid') is None:
        return None
    h, w = frame.shape[:2]
    cx, cy = entry['centroid']
    x0, y0, x1, y1 = entry['box']
    hw = max(2.0, WINDOW * (x1 - x0) / 2)
    hh = max(2.0, WINDOW * (y1 - y0) / 2)
    xa, xb = max(0, int(np.floor(cx - hw))), min(w, int(np.ceil(cx + hw)) + 1)
    ya, yb = max(0, int(np.floor(cy - hh))), min(h, int(np.ceil(cy + hh)) + 1)
    if xa >= xb or ya >= yb:
        return None
    samples = np.asarray(entry.get(f'{colour_key}_samples') or [colour], np.float32)
    lit = samples.max(1) >= DARK
    samples = samples[lit] if lit.sum() * 2 >= len(samples) else samples
    crop = frame[ya:yb, xa:xb].astype(np.float32)
    near = np.zeros(crop.shape[:2], bool)
    for c in samples:       # a loop, not broadcasting: memory stays one window
        near |= ((crop - c) ** 2).sum(-1) <= COLOR_TOL ** 2
    n, labels, stats, _ = cv2.connectedComponentsWithStats(near.astype(np.uint8), connectivity=8)
    area = stats[1:, cv2.CC_STAT_AREA]
    if n < 2 or area.max() < max(MIN_PIXELS, MIN_FOUND * int(entry.get('pixels') or 0)):
        return None
    ys, xs = np.nonzero(np.isin(labels, 1 + np.flatnonzero(area >= SPECK * area.max())))
    return np.array([xs.mean() + xa, ys.mean() + ya])


def object_errors(frames: Mapping[int, np.ndarray], camera: Mapping, colour_key: str = 'color'
                  ) -> dict[str, dict[int, float | None]]:
    """Per object, per scored frame stamp: centroid error in px, None = not found.

    ``frames``: stamp -> RGB frame; ``camera``: that camera's entry of positions.json.
    """
    out: dict[str, dict[int, float | None]] = {}
    for t in sorted(frames):
        truth = camera['frames'].get(str(t))
        if truth is None:
            continue
        for name, entry in truth['objects'].items():
            if (entry.get('pixels') or 0) < MIN_PIXELS or entry.get('centroid') is None:
                continue
            got = find_object(frames[t], entry, colour_key)
            out.setdefault(name, {})[t] = (None if got is None else
                                           float(np.hypot(*(got - entry['centroid']))))
    return out


def summarise(errors: Mapping[str, Mapping[int, float | None]]
              ) -> tuple[float | None, float | None]:
    """(mean error px over found (object, frame) pairs, fraction found); None when nothing."""
    flat = [e for v in errors.values() for e in v.values()]
    found = [e for e in flat if e is not None]
    return (float(np.mean(found)) if found else None,
            len(found) / len(flat) if flat else None)


def position_columns(positions: Mapping | None, camera: str,
                     videos: Mapping[str, Mapping[int, np.ndarray]]) -> tuple[dict, dict]:
    """Row columns ``<video>_obj_px`` and ``<video>_found`` per video ('translated', 'sim',
    'truth'), and per object its scored ``stamps`` with each video's ``<video>_px`` errors
    (None = not found) for the JSON; the columns are None without positions."""
    cam = (positions or {}).get('cameras', {}).get(camera)
    cols: dict = {}
    detail: dict = {}
    for video, frames in videos.items():
        errors = object_errors(frames, cam, COLOURS[video]) if cam else {}
        cols[f'{video}_obj_px'], cols[f'{video}_found'] = summarise(errors)
        for name, errs in errors.items():
            d = detail.setdefault(name, {'stamps': sorted(errs)})
            d[f'{video}_px'] = [None if errs[t] is None else round(errs[t], 2)
                                for t in d['stamps']]
    return cols, detail
