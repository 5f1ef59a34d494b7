"""Per-episode randomisation of a twin scene: layout inside a region, appearance, distractors.

Pure: (base scene, task, config, seed) -> a new scene plus the parameters drawn, so every
episode can be rebuilt from the seed in its metadata. The base scene brings the calibrated
cameras, the table and the task objects' measured sizes (never the bench lab's config). The
layout, target and table markers are the registry task's (comsim_core.tasks), the same the
bench lab draws from.
"""
from __future__ import annotations

import colorsys
import copy
from dataclasses import dataclass
from typing import Any

import numpy as np

from comsim_core.errors import UserError
from comsim_core.geometry import yaw_quat
from comsim_core.tasks.bodies import footprint, half_height
from comsim_core.tasks.layout import Layout, LayoutError, Region
from comsim_core.tasks.registry import get_task, task_names
from comsim_core.tasks.task import Task
from comsim_twin.generation.config import GenerationConfig
from comsim_twin.scene import (
    TEXTURE_KINDS,
    SceneError,
    TableTexture,
    TwinMarker,
    TwinObject,
    TwinScene,
)

DISTRACTOR_PREFIX = 'distractor_'


class RandomiseError(UserError, ValueError):
    """A base scene or region that cannot give a valid layout."""


@dataclass(frozen=True)
class ReachRegion(Region):
    """A box cut to the arm's reach: points also lie within `reach` m of the base (xy)."""
    reach: float = float('inf')

    def sample(self, rng: np.random.Generator, margin: float = 0.0) -> np.ndarray:
        for _ in range(1000):
            xy = super().sample(rng, margin)
            if float(np.hypot(xy[0], xy[1])) <= self.reach - margin:
                return xy
        raise LayoutError(f'region {self} (reach {self.reach} m) has no room for an object '
                          f'margin {margin}')


def _region(bounds: dict) -> Region:
    if 'reach' in bounds:
        return ReachRegion((float(bounds['x'][0]), float(bounds['x'][1])),
                           (float(bounds['y'][0]), float(bounds['y'][1])), float(bounds['reach']))
    return Region.of(bounds['x'], bounds['y'])


def region_cells(bounds: dict, cell_m: float) -> tuple[np.ndarray, np.ndarray]:
    """The ``cell_m`` squares tiling the region's box (lower corners) that overlap the region,
    with the fraction of each inside it (reach cut included; 5x5 points per cell)."""
    xs = np.arange(float(bounds['x'][0]), float(bounds['x'][1]), cell_m)
    ys = np.arange(float(bounds['y'][0]), float(bounds['y'][1]), cell_m)
    sub = (np.arange(5) + 0.5) / 5 * cell_m
    corners, inside = [], []
    for x in xs:
        for y in ys:
            frac = np.mean([in_region((x + dx, y + dy), bounds) for dx in sub for dy in sub])
            if frac > 0:
                corners.append((x, y))
                inside.append(frac)
    return np.asarray(corners, float), np.asarray(inside, float)


def area_layout(task: Task, rng: np.random.Generator, bounds: dict, tcfg: dict, objects,
                cell_m: float, draws: int = 5000) -> Layout:
    """A layout whose first object starts evenly spread over the region's area: a cell drawn
    in proportion to its area inside the region, then the task's own layouts drawn until one
    starts in it. The task's rule alone thins starts where few targets fit around them
    (move_card: a 10-18 cm push that stays inside the region): over the workspace, about half
    the layouts per area beyond |y| = 0.25 m as in the middle (tests/twin/
    test_generation_coverage.py), where a gate policy then failed most (docs/benchmarks.md)."""
    region = _region(bounds)
    corners, inside = region_cells(bounds, cell_m)
    first = task.objects[0]
    for _ in range(20):
        x0, y0 = corners[rng.choice(len(corners), p=inside / inside.sum())]
        for _ in range(draws):
            lay = task.layout(rng, region, tcfg, objects)
            x, y = (float(v) for v in lay.placements[first].xy)
            if x0 <= x < x0 + cell_m and y0 <= y < y0 + cell_m:
                return lay
    return task.layout(rng, region, tcfg, objects)   # cells no layout reaches: the rule's own


@dataclass
class Randomised:
    scene: TwinScene
    target: dict[str, Any]        # task target (move_card: zone), handed to the program
    params: dict[str, Any]        # everything drawn, for the episode metadata
    light_scale: float


def episode_seed(seed: int, task: str, index: int) -> int:
    """Stable per-episode seed from the run seed, task and index (independent of workers)."""
    tag = sum(ord(c) * 31 ** i for i, c in enumerate(task)) % (2 ** 31)
    return int(np.random.SeedSequence([int(seed), tag, int(index)]).generate_state(1)[0])


def in_region(xy, region: dict, margin: float = 0.0) -> bool:
    x, y = float(xy[0]), float(xy[1])
    reach = float(region.get('reach', float('inf')))
    return (region['x'][0] + margin - 1e-9 <= x <= region['x'][1] - margin + 1e-9
            and region['y'][0] + margin - 1e-9 <= y <= region['y'][1] - margin + 1e-9
            and float(np.hypot(x, y)) <= reach - margin + 1e-9)


def _clip01(c) -> list[float]:
    return [float(v) for v in np.clip(np.asarray(c, float), 0.0, 1.0)]


def _jitter_color(rng, color, amount: float) -> list[float]:
    return _clip01(np.asarray(color, float)[:3] + rng.uniform(-amount, amount, 3))


def _rot(axis_angle: np.ndarray) -> np.ndarray:
    theta = float(np.linalg.norm(axis_angle))
    if theta < 1e-12:
        return np.eye(3)
    k = axis_angle / theta
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + np.sin(theta) * kx + (1 - np.cos(theta)) * kx @ kx


def _keep_out(task: Task, target: dict, placed: list[tuple[np.ndarray, float]]) -> list:
    """Circles (centre, radius) distractors must stay clear of: the objects and the marks."""
    marks = [(np.asarray(pose[:2], float), 0.0) for pose in task.marker_poses(target).values()]
    return placed + marks


def _seg_dist(p, a, b) -> float:
    ab = b - a
    s = np.clip(np.dot(p - a, ab) / max(float(ab @ ab), 1e-12), 0.0, 1.0)
    return float(np.linalg.norm(p - (a + s * ab)))


def _distractors(rng, dcfg: dict, keep_out: list, corridor, table_z: float) -> list[TwinObject]:
    lo, hi = dcfg.get('count', [0, 0])
    n = int(rng.integers(int(lo), int(hi) + 1))
    shapes = list(dcfg.get('shapes', ['box']))
    slo, shi = dcfg.get('half_size', [0.012, 0.025])
    region = _region(dcfg.get('region') or {'x': [0.2, 0.6], 'y': [-0.3, 0.3]})
    clear = float(dcfg.get('clearance', 0.08))
    out: list[TwinObject] = []
    for i in range(n):
        shape = shapes[int(rng.integers(len(shapes)))]
        s = float(rng.uniform(slo, shi))
        size = [s, s * rng.uniform(0.7, 1.3), s] if shape == 'box' else [s, s * 1.2]
        r = float(np.hypot(size[0], size[1])) if shape == 'box' else s
        for _ in range(200):
            xy = region.sample(rng, r)
            ok = all(np.linalg.norm(xy - c) >= rr + r + clear for c, rr in keep_out)
            if ok and corridor is not None:
                ok = _seg_dist(xy, *corridor) >= r + clear
            if ok:
                break
        else:
            continue                           # no room: fewer distractors, still valid
        z = table_z + (size[2] if shape == 'box' else size[1])
        yaw = float(rng.uniform(-np.pi, np.pi))
        out.append(TwinObject(f'{DISTRACTOR_PREFIX}{i}', shape, [float(v) for v in size],
                              [float(v) for v in rng.uniform(0.1, 0.9, 3)],
                              [float(xy[0]), float(xy[1]), float(z)], yaw_quat(yaw).tolist(),
                              mass=0.05))
        keep_out.append((xy, r))
    return out


def _markers(task: Task, base: TwinScene, tcfg: dict, target: dict) -> dict[str, TwinMarker]:
    """The task's table marks drawn where the target says, so the images show what the program
    and the success check are given; a mark the base scene has (aligned to the lab) keeps its
    measured size and colour."""
    poses = task.marker_poses(target)
    out = {}
    for m in task.markers(tcfg):
        measured = base.markers.get(m.name)
        color = measured.color if measured is not None else m.color
        x, y, yaw = poses[m.name]
        out[m.name] = TwinMarker(m.name, [float(v) for v in m.half_size],
                                 [float(v) for v in color], [x, y], yaw)
    return out


def _measured(task: Task, base: TwinScene, tcfg: dict) -> dict:
    """tcfg with the sizes of the task's marks the base scene measured (not the defaults)."""
    sizes = {m.size_param: [float(v) for v in base.markers[m.name].size]
             for m in task.markers(tcfg) if m.name in base.markers}
    return {**tcfg, **sizes}


def _kind_weights(kinds, where: str) -> tuple[list[str], np.ndarray]:
    """Kinds and their probabilities from a list (uniform) or a {kind: weight} mapping."""
    if isinstance(kinds, dict):
        names, weights = [str(k) for k in kinds], list(kinds.values())
    elif isinstance(kinds, (list, tuple)) and kinds:
        names, weights = [str(k) for k in kinds], [1.0] * len(kinds)
    else:
        raise RandomiseError(f'{where}.kinds needs a list of kinds or {{kind: weight}}, '
                             f'got {kinds!r}')
    bad = [k for k in names if k not in TEXTURE_KINDS]
    if bad:
        raise RandomiseError(f'{where}.kinds {bad} not in {TEXTURE_KINDS}')
    try:
        w = np.array([float(v) for v in weights])
    except (TypeError, ValueError):
        raise RandomiseError(f'{where}.kinds weights must be numbers, got {weights}') from None
    if np.any(w < 0) or not w.sum() > 0:
        raise RandomiseError(f'{where}.kinds weights must be >= 0 and not all 0, got {weights}')
    return names, w / w.sum()


def _range(tcfg: dict, key: str, default, where: str) -> tuple[float, float]:
    value = tcfg.get(key, default)
    try:
        lo, hi = (float(v) for v in value)
    except (TypeError, ValueError):
        raise RandomiseError(f'{where}.{key} needs [lo, hi], got {value!r}') from None
    if not 0 <= lo <= hi:
        raise RandomiseError(f'{where}.{key} needs 0 <= lo <= hi, got {value!r}')
    return lo, hi


def _table_texture(rng, tcfg: dict, table_color) -> TableTexture:
    """Draw the table's pattern: kind, second colour (the table colour shifted lighter or
    darker by a drawn contrast, plus a little per-channel jitter) and cell size."""
    where = 'randomise.table_texture'
    kinds, p = _kind_weights(tcfg.get('kinds', list(TEXTURE_KINDS)), where)
    kind = kinds[int(rng.choice(len(kinds), p=p))]
    clo, chi = _range(tcfg, 'color2_contrast', [0.15, 0.4], where)
    slo, shi = _range(tcfg, 'scale', [0.02, 0.1], where)
    if slo <= 0:
        raise RandomiseError(f'{where}.scale must be > 0 m, got {tcfg.get("scale")!r}')
    contrast = float(rng.uniform(clo, chi)) * (1.0 if rng.random() < 0.5 else -1.0)
    color2 = _jitter_color(rng, np.asarray(table_color, float)[:3] + contrast,
                           float(tcfg.get('color2_jitter', 0.05)))
    texture = TableTexture(kind, color2, float(rng.uniform(slo, shi)))
    try:
        return texture.check(where)
    except SceneError as exc:
        raise RandomiseError(str(exc)) from None


def hue_excluded(hue_deg: float, bands: list) -> bool:
    """Whether ``hue_deg`` lies in one of ``bands`` ([lo, hi] degrees; lo may be negative:
    [-35, 35] is the reds either side of 0)."""
    return any((hue_deg - float(lo)) % 360.0 <= (float(hi) - float(lo)) for lo, hi in bands)


def _recolour(rng, rc: dict, where: str) -> list[float]:
    """A colour of a hue outside ``rc['exclude_hue_deg']``, saturation and value in their
    ranges (HSV drawn uniformly; the hue by rejection, so the allowed hues stay uniform)."""
    bands = rc.get('exclude_hue_deg') or []
    try:
        bands = [(float(lo), float(hi)) for lo, hi in bands]
    except (TypeError, ValueError):
        raise RandomiseError(f'{where}.exclude_hue_deg needs [[lo, hi], ...] in degrees, got '
                             f'{rc.get("exclude_hue_deg")!r}') from None
    if any(hi < lo for lo, hi in bands) or sum(hi - lo for lo, hi in bands) >= 360:
        raise RandomiseError(f'{where}.exclude_hue_deg leaves no hue (or has hi < lo): {bands}')
    slo, shi = _range(rc, 'saturation', [0.5, 0.9], where)
    vlo, vhi = _range(rc, 'value', [0.45, 0.95], where)
    if shi > 1 or vhi > 1:
        raise RandomiseError(f'{where}: saturation and value are 0-1')
    while True:
        hue = float(rng.uniform(0.0, 360.0))
        if not hue_excluded(hue, bands):
            break
    return [float(c) for c in colorsys.hsv_to_rgb(hue / 360.0, float(rng.uniform(slo, shi)),
                                                  float(rng.uniform(vlo, vhi)))]


def _draw_appearance(rng, scene: TwinScene, rcfg: dict) -> tuple[float, dict]:
    """Draw the scene's look in place: table colour and texture, background, camera pose
    jitter; returns the light scale and the camera offsets. Objects and layout are untouched."""
    scene.table_color = _jitter_color(rng, scene.table_color,
                                      float(rcfg.get('table_color_jitter', 0.0)))
    scene.background_color = _jitter_color(rng, scene.background_color,
                                           float(rcfg.get('background_color_jitter', 0.0)))
    llo, lhi = rcfg.get('light_scale', [1.0, 1.0])
    light = float(rng.uniform(llo, lhi))
    cam_params = {}
    pj, rj = float(rcfg.get('camera_position_jitter', 0.0)), \
        float(rcfg.get('camera_rotation_jitter', 0.0))
    for name, cam in scene.cameras.items():
        dp, dr = rng.uniform(-pj, pj, 3), rng.uniform(-rj, rj, 3)
        T = np.array(cam.T_base_camera, float)
        T[:3, :3] = _rot(dr) @ T[:3, :3]
        T[:3, 3] = T[:3, 3] + dp
        cam.T_base_camera = T
        cam_params[name] = {'position_offset': dp.tolist(), 'rotation_offset': dr.tolist()}
    tex_cfg = rcfg.get('table_texture') or {}
    if tex_cfg.get('enabled', False):       # drawn last: the draws above do not move
        texture = _table_texture(rng, tex_cfg, scene.table_color)
        scene.table_texture = texture if texture.kind != 'none' else None
    return light, cam_params


def appearance_variant(base: TwinScene, cfg: GenerationConfig, seed: int) -> Randomised:
    """The base scene with only its look drawn as generation draws it (table colour and
    texture, background, lights, camera jitter); objects, their colours and places untouched.

    Why: the neural simulator learns the lab's look from replays of the real demos; replayed in
    the aligned scene alone, it only ever sees the twin's default look, then has to translate
    generated episodes whose look is randomised. Replays in these variants, with the same lab
    footage as the target, teach it that the twin's look is not the lab's."""
    scene = copy.deepcopy(base)
    rng = np.random.default_rng(seed)
    light, cam_params = _draw_appearance(rng, scene, cfg.randomise)
    texture = {'kind': 'none'} if scene.table_texture is None else scene.table_texture.to_dict()
    scene.provenance = {**base.provenance, 'appearance_variant': {'seed': int(seed)}}
    params = {'table_color': scene.table_color, 'table_texture': texture,
              'background_color': scene.background_color, 'light_scale': light,
              'cameras': cam_params}
    return Randomised(scene, {}, params, light)


def randomise(base: TwinScene, task: str, cfg: GenerationConfig, seed: int,
              region: str | None = None) -> Randomised:
    """Draw one episode's scene from the base scene (same seed -> same scene)."""
    try:
        return _randomise(base, task, cfg, seed, region)
    except LayoutError as exc:
        raise RandomiseError(str(exc)) from None


def _randomise(base: TwinScene, task_name: str, cfg: GenerationConfig, seed: int,
               region: str | None) -> Randomised:
    if task_name not in task_names():
        raise RandomiseError(f'no layout rule for task {task_name!r}; known: {task_names()}')
    task = get_task(task_name)
    missing = [n for n in task.objects if n not in base.objects]
    if missing:
        raise RandomiseError(f'base scene lacks task objects {missing}; it has '
                             f'{sorted(base.objects)}')
    rng = np.random.default_rng(seed)
    tcfg, rcfg = cfg.task(task_name), cfg.randomise
    if region is None:
        region = cfg.region if cfg.region != 'mix' else \
            ('wide' if rng.random() < cfg.wide_fraction else 'id')
    if region not in tcfg['regions']:
        raise RandomiseError(f'{cfg.source}: tasks.{task_name}.regions has no {region!r} region; '
                             f'it has {sorted(tcfg["regions"])}')
    reg = tcfg['regions'][region]
    scene = copy.deepcopy(base)
    scene.task = task_name
    scene.objects = {n: scene.objects[n] for n in task.objects}
    lo, hi = rcfg.get('size_scale', [1.0, 1.0])
    scale = float(rng.uniform(lo, hi))
    for o in scene.objects.values():
        o.size = [float(v) * scale for v in o.size]
        o.color = _jitter_color(rng, o.color, float(rcfg.get('object_color_jitter', 0.0)))
    tcfg = _measured(task, base, tcfg)
    layout: Layout = (area_layout(task, rng, reg, tcfg, scene.objects, cfg.coverage_cell_m)
                      if cfg.coverage == 'area' else
                      task.layout(rng, _region(reg), tcfg, scene.objects))
    target = layout.target
    scene.markers = _markers(task, base, tcfg, target)
    table_z = 0.0
    for name, place in layout.placements.items():
        o = scene.objects[name]
        o.pos = [float(place.xy[0]), float(place.xy[1]), table_z + half_height(o) + 1e-4]
        o.quat = yaw_quat(place.yaw).tolist()
    placed = [(np.asarray(o.pos[:2]), footprint(o)) for o in scene.objects.values()]
    for d in _distractors(rng, rcfg.get('distractors') or {}, _keep_out(task, target, placed),
                          task.clear_path(layout), table_z):
        scene.objects[d.name] = d
    light, cam_params = _draw_appearance(rng, scene, rcfg)
    recolour = (rcfg.get('recolour') or {}).get(task_name)
    recoloured = False
    if recolour:        # after every other draw: a task without it draws what it drew before
        where = f'randomise.recolour.{task_name}'
        share = float(recolour.get('share', 0.0))
        if not 0 <= share <= 1:
            raise RandomiseError(f'{where}.share must be 0-1, got {share}')
        if rng.random() < share:
            recoloured = True
            for name in task.objects:
                scene.objects[name].color = _recolour(rng, recolour, where)
    texture_params = ({'kind': 'none'} if scene.table_texture is None
                      else scene.table_texture.to_dict())
    scene.provenance = {**base.provenance, 'generation': {'seed': int(seed), 'region': region}}
    params = {
        'region': region, 'region_bounds': reg, 'coverage': cfg.coverage, 'size_scale': scale,
        'objects': {n: {'shape': o.shape, 'size': o.size, 'color': o.color, 'pos': o.pos,
                        'quat': o.quat} for n, o in scene.objects.items()},
        'recoloured': recoloured,
        'distractors': sorted(n for n in scene.objects if n.startswith(DISTRACTOR_PREFIX)),
        'table_color': scene.table_color, 'table_texture': texture_params,
        'background_color': scene.background_color,
        'light_scale': light, 'cameras': cam_params, 'target': target,
        'markers': {n: m.to_dict() for n, m in scene.markers.items()}}
    return Randomised(scene, target, params, light)


def scale_cameras(scene: TwinScene, factor: float) -> TwinScene:
    """Same cameras at a lower resolution (K scaled; distortion is in normalised coordinates)."""
    if factor == 1.0:
        return scene
    scene = copy.deepcopy(scene)
    for cam in scene.cameras.values():
        K = np.array(cam.K, float)
        w, h = max(8, round(cam.width * factor)), max(8, round(cam.height * factor))
        sx, sy = w / cam.width, h / cam.height
        K[0, :2] *= sx
        K[1, 1] *= sy
        K[0, 2] = (K[0, 2] + 0.5) * sx - 0.5      # pixel centres, not corners, scale
        K[1, 2] = (K[1, 2] + 0.5) * sy - 0.5
        cam.K, cam.width, cam.height = K, w, h
    return scene
