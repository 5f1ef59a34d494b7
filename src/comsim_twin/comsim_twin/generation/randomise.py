"""Per-episode randomisation of a twin scene: layout inside a region, appearance, distractors.

Pure: (base scene, task, config, seed) -> a new scene plus the parameters drawn, so every
episode can be rebuilt from the seed in its metadata. The base scene brings the calibrated
cameras, the table and the task objects' measured sizes (never the bench lab's config).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np

from comsim_core.errors import UserError
from comsim_twin.generation.config import GenerationConfig
from comsim_twin.scene import (
    TEXTURE_KINDS,
    SceneError,
    TableTexture,
    TwinMarker,
    TwinObject,
    TwinScene,
)

TASK_OBJECTS = {'stack_blocks': ('block_top', 'block_bottom'), 'move_card': ('card',),
                'shake_bottle': ('bottle',)}
DISTRACTOR_PREFIX = 'distractor_'
ZONE_MARKER = 'target_zone'                 # move_card: the zone drawn on the table
ZONE_COLOR = [0.2, 0.75, 0.3]               # when neither base scene nor config gives one


class RandomiseError(UserError, ValueError):
    """A base scene or region that cannot give a valid layout."""


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


def half_height(o: TwinObject) -> float:
    return float(o.size[2] if o.shape == 'box' else o.size[1])


def footprint(o: TwinObject) -> float:
    return float(np.hypot(o.size[0], o.size[1]) if o.shape == 'box' else o.size[0])


def yaw_quat(yaw: float) -> list[float]:
    return [float(np.cos(yaw / 2)), 0.0, 0.0, float(np.sin(yaw / 2))]


def in_region(xy, region: dict, margin: float = 0.0) -> bool:
    x, y = float(xy[0]), float(xy[1])
    return (region['x'][0] + margin - 1e-9 <= x <= region['x'][1] - margin + 1e-9
            and region['y'][0] + margin - 1e-9 <= y <= region['y'][1] - margin + 1e-9)


def _sample_xy(rng: np.random.Generator, region: dict, margin: float) -> np.ndarray:
    lo = np.array([region['x'][0] + margin, region['y'][0] + margin])
    hi = np.array([region['x'][1] - margin, region['y'][1] - margin])
    if np.any(hi < lo):
        raise RandomiseError(f'region {region} is smaller than the object margin {margin}')
    return rng.uniform(lo, hi)


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


def _layout(task: str, rng, region: dict, tcfg: dict, objs: dict[str, TwinObject]):
    """Object xy/yaw per task and the task target."""
    ylo, yhi = tcfg.get('yaw', [-np.pi, np.pi])
    if task == 'stack_blocks':
        a, b = objs['block_top'], objs['block_bottom']
        gap = float(tcfg.get('min_gap', 0.03))
        for _ in range(500):
            pa, pb = _sample_xy(rng, region, footprint(a)), _sample_xy(rng, region, footprint(b))
            if np.linalg.norm(pa - pb) >= footprint(a) + footprint(b) + gap:
                break
        else:
            raise RandomiseError(f'stack_blocks: region {region} too small for both blocks')
        poses = {'block_top': (pa, rng.uniform(ylo, yhi)),
                 'block_bottom': (pb, rng.uniform(ylo, yhi))}
        return poses, {'place_on': 'block_bottom'}
    if task == 'move_card':
        card = objs['card']
        dmin, dmax = tcfg.get('push_distance', [0.10, 0.18])
        for _ in range(1000):
            start = _sample_xy(rng, region, 0.5 * max(card.size[0], card.size[1]))
            goal = _sample_xy(rng, region, 0.0)
            if dmin <= np.linalg.norm(goal - start) <= dmax:
                break
        else:
            raise RandomiseError(f'move_card: region {region} cannot fit a {dmin}-{dmax} m push')
        half = [float(v) for v in tcfg.get('zone_half_size', [0.06, 0.05])]
        return ({'card': (start, rng.uniform(ylo, yhi))},
                {'zone_center': [float(goal[0]), float(goal[1])], 'zone_half_size': half,
                 'zone_yaw': 0.0})
    if task == 'shake_bottle':
        b = objs['bottle']
        return ({'bottle': (_sample_xy(rng, region, footprint(b)), rng.uniform(ylo, yhi))},
                {'min_lift': float(tcfg.get('min_lift', 0.05)),
                 'min_oscillations': int(tcfg.get('min_oscillations', 3))})
    raise RandomiseError(f'no layout rule for task {task!r}; known: {sorted(TASK_OBJECTS)}')


def _keep_out(target: dict, placed: list[tuple[np.ndarray, float]]) -> list:
    """Circles (centre, radius) and segments distractors must stay clear of."""
    zone = target.get('zone_center')
    return placed + ([(np.asarray(zone, float), 0.0)] if zone is not None else [])


def _seg_dist(p, a, b) -> float:
    ab = b - a
    s = np.clip(np.dot(p - a, ab) / max(float(ab @ ab), 1e-12), 0.0, 1.0)
    return float(np.linalg.norm(p - (a + s * ab)))


def _distractors(rng, dcfg: dict, keep_out: list, corridor, table_z: float) -> list[TwinObject]:
    lo, hi = dcfg.get('count', [0, 0])
    n = int(rng.integers(int(lo), int(hi) + 1))
    shapes = list(dcfg.get('shapes', ['box']))
    slo, shi = dcfg.get('half_size', [0.012, 0.025])
    region = dcfg.get('region') or {'x': [0.2, 0.6], 'y': [-0.3, 0.3]}
    clear = float(dcfg.get('clearance', 0.08))
    out: list[TwinObject] = []
    for i in range(n):
        shape = shapes[int(rng.integers(len(shapes)))]
        s = float(rng.uniform(slo, shi))
        size = [s, s * rng.uniform(0.7, 1.3), s] if shape == 'box' else [s, s * 1.2]
        r = float(np.hypot(size[0], size[1])) if shape == 'box' else s
        for _ in range(200):
            xy = _sample_xy(rng, region, r)
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
                              [float(xy[0]), float(xy[1]), float(z)], yaw_quat(yaw), mass=0.05))
        keep_out.append((xy, r))
    return out


def _zone_marker(target: dict, base_zone: TwinMarker | None, tcfg: dict) -> TwinMarker:
    """The move_card zone drawn where the target says, so the images show what the program
    and the success check are given (same centre, half size and yaw)."""
    color = base_zone.color if base_zone is not None else tcfg.get('zone_color', ZONE_COLOR)
    return TwinMarker(ZONE_MARKER, [float(v) for v in target['zone_half_size']],
                      [float(v) for v in color], [float(v) for v in target['zone_center']],
                      float(target.get('zone_yaw', 0.0)))


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


def randomise(base: TwinScene, task: str, cfg: GenerationConfig, seed: int,
              region: str | None = None) -> Randomised:
    """Draw one episode's scene from the base scene (same seed -> same scene)."""
    if task not in TASK_OBJECTS:
        raise RandomiseError(f'no layout rule for task {task!r}; known: {sorted(TASK_OBJECTS)}')
    missing = [n for n in TASK_OBJECTS[task] if n not in base.objects]
    if missing:
        raise RandomiseError(f'base scene lacks task objects {missing}; it has '
                             f'{sorted(base.objects)}')
    rng = np.random.default_rng(seed)
    tcfg, rcfg = cfg.task(task), cfg.randomise
    if region is None:
        region = cfg.region if cfg.region != 'mix' else \
            ('wide' if rng.random() < cfg.wide_fraction else 'id')
    reg = tcfg['regions'][region]
    scene = copy.deepcopy(base)
    scene.task = task
    scene.objects = {n: scene.objects[n] for n in TASK_OBJECTS[task]}
    lo, hi = rcfg.get('size_scale', [1.0, 1.0])
    scale = float(rng.uniform(lo, hi))
    for o in scene.objects.values():
        o.size = [float(v) * scale for v in o.size]
        o.color = _jitter_color(rng, o.color, float(rcfg.get('object_color_jitter', 0.0)))
    base_zone = base.markers.get(ZONE_MARKER)
    if task == 'move_card' and base_zone is not None:   # the lab's measured zone, not a default
        tcfg = {**tcfg, 'zone_half_size': list(base_zone.size)}
    poses, target = _layout(task, rng, reg, tcfg, scene.objects)
    scene.markers = {}
    if 'zone_center' in target:
        scene.markers[ZONE_MARKER] = _zone_marker(target, base_zone, tcfg)
    table_z = 0.0
    for name, (xy, yaw) in poses.items():
        o = scene.objects[name]
        o.pos = [float(xy[0]), float(xy[1]), table_z + half_height(o) + 1e-4]
        o.quat = yaw_quat(float(yaw))
    placed = [(np.asarray(o.pos[:2]), footprint(o)) for o in scene.objects.values()]
    corridor = None
    if 'zone_center' in target:
        corridor = (np.asarray(scene.objects['card'].pos[:2]), np.asarray(target['zone_center']))
    for d in _distractors(rng, rcfg.get('distractors') or {}, _keep_out(target, placed),
                          corridor, table_z):
        scene.objects[d.name] = d
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
    texture_params = ({'kind': 'none'} if scene.table_texture is None
                      else scene.table_texture.to_dict())
    scene.provenance = {**base.provenance, 'generation': {'seed': int(seed), 'region': region}}
    params = {
        'region': region, 'region_bounds': reg, 'size_scale': scale,
        'objects': {n: {'shape': o.shape, 'size': o.size, 'color': o.color, 'pos': o.pos,
                        'quat': o.quat} for n, o in scene.objects.items()},
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
