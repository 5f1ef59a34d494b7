"""align_episode: the twin scene (object poses, sizes, colours) from an episode's first frames.

Per camera: table model and exposure gain -> foreground -> colour labels -> the component
that matches each sheet object (colour and expected size); across cameras: fused first
estimate, then render-and-compare refinement (backend or analytic silhouettes); colours are
robust medians mapped to sim RGB. Only the lab's own knowledge is used: calibrated cameras,
the measured object sheet, the images.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import cv2
import numpy as np

from comsim_twin.alignment.colours import exposure_gain, label_pixels, to_reflectance
from comsim_twin.alignment.errors import AlignmentError
from comsim_twin.alignment.geometry import pixels_to_plane
from comsim_twin.alignment.localise import (
    Pose2D,
    initial_position,
    initial_yaw,
    refine,
    wrap_yaw,
    yaw_period,
)
from comsim_twin.alignment.segmentation import (
    fit_table,
    foreground,
    robust_colour,
    table_roi,
)
from comsim_twin.alignment.sheet import ObjectSheet, SheetMarker, SheetObject, load_sheet
from comsim_twin.alignment.silhouettes import (
    BackendSilhouettes,
    ProjectedSilhouettes,
    twin_object,
)
from comsim_twin.scene import TwinCamera, TwinMarker, TwinScene

MAX_AREA_RATIO = 3.5   # a component this far from the expected silhouette area is not the object


@dataclass
class ObjectReport:
    name: str
    position: list[float]
    yaw: float
    iou: float
    colour: list[float]
    colour_name: str
    cameras: list[str]
    first_estimate: list[float]     # x, y, yaw before render-and-compare
    renders: int


@dataclass
class AlignmentReport:
    task: str
    variant: str
    renderer: str
    objects: dict[str, ObjectReport]
    table_colour: list[float]
    background_colour: list[float]
    gains: dict[str, list[float]]
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    markers: dict[str, ObjectReport] = field(default_factory=dict)   # table marks (z = 0)

    def to_dict(self) -> dict:
        d = asdict(self)
        d['objects'] = {n: asdict(o) for n, o in self.objects.items()}
        d['markers'] = {n: asdict(o) for n, o in self.markers.items()}
        return d


@dataclass
class _View:
    """One camera's first image and what segmentation learnt from it."""
    cam: TwinCamera
    image: np.ndarray
    roi: np.ndarray
    fg: np.ndarray
    labels: np.ndarray
    names: list[str]
    gain: np.ndarray


def default_topic(cam: TwinCamera) -> str:
    return cam.topic or f'/cameras/{cam.name}/image_raw'


def first_images(episode_path: str | Path, cameras: dict[str, TwinCamera]) -> dict[str, np.ndarray]:
    """The first image of each camera's topic (the arm is at home, the objects at rest)."""
    from comsim_core.episodes import Episode, MissingTopicError

    out = {}
    with Episode.open(episode_path) as ep:
        for name, cam in cameras.items():
            topic = default_topic(cam)
            try:
                stream = ep.images(topic)
            except MissingTopicError as exc:
                raise AlignmentError(f'{episode_path}: camera {name!r} topic {topic} is not in '
                                     f'the episode; topics: {ep.topics}') from exc
            first = next(iter(stream), None)
            if first is None:
                raise AlignmentError(f'{episode_path}: no image on {topic}')
            out[name] = first[1]
    return out


def align_episode(episode_path: str | Path, cameras: dict[str, TwinCamera],
                  objects_sheet: ObjectSheet | str | Path, task: str,
                  variant: str | None = None, backend=None) -> tuple[TwinScene, AlignmentReport]:
    """Twin scene and report from an episode's first frames (see module docs)."""
    sheet = objects_sheet if isinstance(objects_sheet, ObjectSheet) else load_sheet(objects_sheet)
    sheet.objects(task, variant)              # unknown task/variant: fail before reading images
    images = first_images(episode_path, cameras)
    scene, report = align_images(images, cameras, sheet, task, variant, backend)
    scene.provenance['alignment']['episode'] = str(episode_path)
    return scene, report


def align_images(images: dict[str, np.ndarray], cameras: dict[str, TwinCamera],
                 sheet: ObjectSheet, task: str, variant: str | None = None,
                 backend=None) -> tuple[TwinScene, AlignmentReport]:
    """Alignment from one image per camera (RGB uint8, raw/distorted as the camera gives it)."""
    t0 = time.perf_counter()
    objects = sheet.objects(task, variant)
    if not cameras:
        raise AlignmentError('alignment needs at least one calibrated camera')
    views = {n: _segment(images[n], cam, sheet) for n, cam in cameras.items()}
    warnings: list[str] = []
    masks: dict[str, dict[str, np.ndarray]] = {}
    for name, obj in objects.items():
        cands = {c: [k for k in _candidates(v, obj) if sheet.in_workspace(k.xy)]
                 for c, v in views.items()}
        masks[name] = _consistent(cands)
        for cname in views:
            if cname not in masks[name]:
                warnings.append(f'{name}: not found by camera {cname}')
        if not masks[name]:
            raise AlignmentError(f'object {name!r} ({obj.colour} {obj.shape}) not found in any '
                                 f'camera image ({sorted(views)}); is it on the table and '
                                 f'is task {task!r} variant {variant or "default"!r} right?')

    first: dict[str, Pose2D] = {}
    for name, obj in objects.items():
        cams = [cameras[c] for c in masks[name]]
        ms = list(masks[name].values())
        xy = initial_position(cams, ms, obj.half_height)
        first[name] = Pose2D(float(xy[0]), float(xy[1]), initial_yaw(cams, ms, obj))

    colours = {name: _object_colour(views, masks[name]) for name in objects}
    table_colour = list(sheet.colours.get(sheet.table_colour, (0.6, 0.5, 0.4)))
    background = _background_colour(views)
    scene = TwinScene(table_size=list(sheet.table_half_size),
                      table_center=list(sheet.table_center), table_color=table_colour,
                      background_color=background, cameras=dict(cameras), task=task)
    for name, obj in objects.items():
        p = first[name]
        scene.objects[name] = twin_object(obj, p.x, p.y, p.yaw, colours[name])

    renderer = (BackendSilhouettes(backend, scene) if backend is not None
                else ProjectedSilhouettes())
    reports = {}
    for name, obj in objects.items():
        cams = [cameras[c] for c in masks[name]]
        pose, score, evals = refine(renderer, cams, list(masks[name].values()), obj, first[name])
        yaw = wrap_yaw(pose.yaw, yaw_period(obj))
        scene.objects[name] = twin_object(obj, pose.x, pose.y, yaw, colours[name])
        if backend is not None:
            backend.set_object_pose(name, np.array(scene.objects[name].pos),
                                    np.array(scene.objects[name].quat))
        p0 = first[name]
        reports[name] = ObjectReport(name, list(scene.objects[name].pos), yaw, score,
                                     colours[name], obj.colour, sorted(masks[name]),
                                     [p0.x, p0.y, p0.yaw], evals)
    marker_reports = {}
    for name, mk in sheet.markers(task).items():
        scene.markers[name], marker_reports[name] = _align_marker(views, cameras, sheet, mk,
                                                                  warnings)
    scene.provenance['alignment'] = {
        'task': task, 'variant': variant or 'default', 'sheet': sheet.source,
        'renderer': renderer.name, 'cameras': sorted(cameras)}
    report = AlignmentReport(task, variant or 'default', renderer.name, reports, table_colour,
                             background, {n: v.gain.tolist() for n, v in views.items()},
                             warnings, time.perf_counter() - t0, marker_reports)
    return scene, report


def _align_marker(views: dict[str, _View], cameras: dict[str, TwinCamera], sheet: ObjectSheet,
                  mk: SheetMarker, warnings: list[str]) -> tuple[TwinMarker, ObjectReport]:
    """A flat table mark, found like an object (colour, expected area, cross-camera agreement)
    and refined by analytic render-and-compare of its top face: it has no depth, so any
    renderer would draw the same rectangle, and the twin backend is not built with it yet."""
    proxy = mk.as_object()
    cands = {c: [k for k in _candidates(v, proxy) if sheet.in_workspace(k.xy)]
             for c, v in views.items()}
    masks = _consistent(cands)
    if not masks:
        raise AlignmentError(f'marker {mk.name!r} ({mk.colour} {mk.shape}) not found in any '
                             f'camera image ({sorted(views)}); is it on the table?')
    warnings += [f'{mk.name}: not found by camera {c}' for c in views if c not in masks]
    cams, ms = [cameras[c] for c in masks], list(masks.values())
    xy = initial_position(cams, ms, proxy.half_height)
    first = Pose2D(float(xy[0]), float(xy[1]), initial_yaw(cams, ms, proxy))
    pose, score, evals = refine(ProjectedSilhouettes(), cams, ms, proxy, first)
    yaw = wrap_yaw(pose.yaw, yaw_period(proxy))
    colour = _object_colour(views, masks)
    marker = TwinMarker(mk.name, list(mk.size), colour, [pose.x, pose.y], yaw)
    report = ObjectReport(mk.name, [pose.x, pose.y, 0.0], yaw, score, colour, mk.colour,
                          sorted(masks), [first.x, first.y, first.yaw], evals)
    return marker, report


def _segment(image: np.ndarray, cam: TwinCamera, sheet: ObjectSheet) -> _View:
    if image.shape[:2] != (cam.height, cam.width):
        raise AlignmentError(f'camera {cam.name}: image is {image.shape[1]}x{image.shape[0]} '
                             f'but the calibration is {cam.width}x{cam.height}')
    roi = table_roi(cam, sheet.table_half_size, sheet.table_center)
    try:
        table = fit_table(image, roi)
    except ValueError as exc:
        raise AlignmentError(f'camera {cam.name}: {exc}') from exc
    ref = sheet.colours.get(sheet.table_colour)
    if ref is None:
        raise AlignmentError(f'{sheet.source}: table colour {sheet.table_colour!r} is not in '
                             f'the sheet colours {sorted(sheet.colours)}')
    gain = exposure_gain(table.colour_median, np.asarray(ref))
    fg = foreground(image, table, roi)
    labels, names = label_pixels(to_reflectance(image.astype(float), gain), sheet.colours)
    return _View(cam, image, roi, fg, labels, names, gain)


def _expected_area(cam: TwinCamera, obj: SheetObject, x: float, y: float) -> float:
    return float(ProjectedSilhouettes().mask(cam, obj, x, y, 0.0).sum())


@dataclass
class _Candidate:
    mask: np.ndarray
    xy: np.ndarray        # centroid back-projected to the plane z = half-height
    area_error: float     # |log(area / expected silhouette area)|


def _candidates(view: _View, obj: SheetObject) -> list[_Candidate]:
    """Components of the object's colour whose area is near its expected silhouette's."""
    cand = view.fg & (view.labels == view.names.index(obj.colour))
    cand = cv2.morphologyEx(cand.astype(np.uint8), cv2.MORPH_CLOSE, np.ones((3, 3), np.uint8))
    n, labels, stats, cents = cv2.connectedComponentsWithStats(cand, 8)
    out = []
    for i in range(1, n):
        area = stats[i, cv2.CC_STAT_AREA]
        if area < 8:
            continue
        xy = pixels_to_plane(view.cam, cents[i][None], obj.half_height)[0, :2]
        if not np.isfinite(xy).all():
            continue
        expected = _expected_area(view.cam, obj, xy[0], xy[1])
        if expected < 1:
            continue
        err = float(abs(np.log(area / expected)))
        if err < np.log(MAX_AREA_RATIO):
            out.append(_Candidate(_fill_holes(labels == i), xy, err))
    return out


def _consistent(cands: dict[str, list[_Candidate]], max_spread: float = 0.03
                ) -> dict[str, np.ndarray]:
    """One component per camera (or none) so that all agree on where the object is.

    Score: area errors, plus the back-projected spread in cm, minus one per camera used (more
    views are better); choices more than max_spread apart are rejected.
    """
    import itertools

    names = list(cands)
    options = [[None, *range(len(cands[n]))] for n in names]
    best, best_score = {}, np.inf
    for combo in itertools.product(*options):
        chosen = [(n, cands[n][i]) for n, i in zip(names, combo) if i is not None]
        if not chosen:
            continue
        xys = [c.xy for _, c in chosen]
        spread = max((np.linalg.norm(a - b) for a, b in itertools.combinations(xys, 2)),
                     default=0.0)
        if spread > max_spread:
            continue
        score = sum(c.area_error for _, c in chosen) + spread / 0.01 - len(chosen)
        if score < best_score:
            best, best_score = {n: c.mask for n, c in chosen}, score
    return best


def _fill_holes(mask: np.ndarray) -> np.ndarray:
    contours, _ = cv2.findContours(mask.astype(np.uint8), cv2.RETR_EXTERNAL,
                                   cv2.CHAIN_APPROX_NONE)
    out = np.zeros(mask.shape, np.uint8)
    cv2.drawContours(out, contours, -1, 1, thickness=cv2.FILLED)
    return out.astype(bool)


def _object_colour(views: dict[str, _View], masks: dict[str, np.ndarray]) -> list[float]:
    """Median over cameras of each camera's gain-corrected robust object colour."""
    cols = [to_reflectance(robust_colour(views[c].image, m), views[c].gain)
            for c, m in masks.items()]
    return [float(v) for v in np.median(np.array(cols), axis=0)]


def _background_colour(views: dict[str, _View]) -> list[float]:
    """Median colour off the table (floor, walls), gain-corrected."""
    cols = []
    for v in views.values():
        off = ~cv2.dilate(v.roi.astype(np.uint8), np.ones((9, 9), np.uint8)).astype(bool)
        if off.sum() > 50:
            cols.append(to_reflectance(np.median(v.image[off].astype(float), axis=0), v.gain))
    return [float(c) for c in np.median(np.array(cols), axis=0)] if cols else [0.2, 0.2, 0.2]
