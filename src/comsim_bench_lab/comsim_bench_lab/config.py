"""Lab description (config/bench_lab/lab.yaml) as validated dataclasses.

Validation happens here, once, so a bad YAML fails at load with the file and key named
instead of deep inside MuJoCo compilation.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from comsim_core.errors import UserError, load_yaml

SHAPES = ('box', 'cylinder', 'sphere')


class LabConfigError(UserError, ValueError):
    """A lab config value that cannot work; the message names the file and the key."""


class LabConfigKeyError(LabConfigError, KeyError):
    """A key the lab config needs but lacks (a KeyError for callers that look keys up)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ''


class _Reader:
    """Typed access to a YAML mapping that names the file and key path on errors."""

    def __init__(self, data: Any, source: str, where: str = ''):
        if not isinstance(data, dict):
            raise LabConfigError(f'{source}: {where or "top level"} must be a mapping')
        self.data, self.source, self.where = data, source, where

    def _key(self, key: str) -> str:
        return f'{self.where}.{key}' if self.where else key

    def has(self, key: str) -> bool:
        return key in self.data

    def sub(self, key: str) -> '_Reader':
        if key not in self.data:
            raise LabConfigKeyError(f'{self.source}: missing key {self._key(key)!r}')
        return _Reader(self.data[key], self.source, self._key(key))

    def get(self, key: str, default: Any = ...) -> Any:
        if key not in self.data:
            if default is ...:
                raise LabConfigKeyError(f'{self.source}: missing key {self._key(key)!r}')
            return default
        return self.data[key]

    def num(self, key: str, default: Any = ..., lo: float | None = None,
            hi: float | None = None) -> float:
        val = self.get(key, default)
        try:
            val = float(val)
        except (TypeError, ValueError):
            raise LabConfigError(f'{self.source}: {self._key(key)} must be a number, got {val!r}')
        if (lo is not None and val < lo) or (hi is not None and val > hi):
            raise LabConfigError(f'{self.source}: {self._key(key)}={val} outside [{lo}, {hi}]')
        return val

    def vec(self, key: str, n: int | tuple[int, ...], default: Any = ...) -> np.ndarray:
        val = self.get(key, default)
        sizes = (n,) if isinstance(n, int) else n
        try:
            arr = np.asarray(val, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            raise LabConfigError(f'{self.source}: {self._key(key)} must be a list of numbers')
        if arr.size not in sizes:
            raise LabConfigError(f'{self.source}: {self._key(key)} needs '
                                 f'{" or ".join(map(str, sizes))} numbers, got {arr.size}')
        return arr


@dataclass
class TableConfig:
    size: np.ndarray        # (x, y) full extent, m
    center: np.ndarray      # (x, y) of the table centre in the base frame
    thickness: float
    height: float           # table top above the floor, m
    color: np.ndarray


@dataclass
class CameraConfig:
    name: str
    width: int
    height: int
    fx: float
    fy: float
    cx: float
    cy: float
    distortion: np.ndarray  # k1 k2 p1 p2 k3 (OpenCV plumb_bob)
    position: np.ndarray    # camera centre in the base frame
    rotation: np.ndarray    # 3x3, columns = OpenCV camera axes (x right, y down, z forward) in base

    @property
    def K(self) -> np.ndarray:
        return np.array([[self.fx, 0.0, self.cx], [0.0, self.fy, self.cy], [0.0, 0.0, 1.0]])


@dataclass
class LightConfig:
    position: np.ndarray
    direction: np.ndarray
    diffuse: np.ndarray
    castshadow: bool


@dataclass
class ObjectConfig:
    """One rigid object.

    size uses MuJoCo half-sizes: box (hx,hy,hz), cylinder (r, half_h), sphere (r).
    """

    name: str
    shape: str
    size: np.ndarray
    color: np.ndarray
    mass: float
    friction: float
    neck: np.ndarray | None = None   # optional (radius, half_height) cylinder on top (bottles)

    @property
    def half_height(self) -> float:
        return float(self.size[0] if self.shape == 'sphere' else self.size[-1])


@dataclass
class RegionConfig:
    x: np.ndarray   # (min, max)
    y: np.ndarray

    def sample(self, rng: np.random.Generator, margin: float = 0.0) -> np.ndarray:
        return np.array([rng.uniform(self.x[0] + margin, self.x[1] - margin),
                         rng.uniform(self.y[0] + margin, self.y[1] - margin)])

    def overlaps(self, other: 'RegionConfig') -> bool:
        return bool(self.x[0] < other.x[1] and other.x[0] < self.x[1]
                    and self.y[0] < other.y[1] and other.y[0] < self.y[1])


@dataclass
class TaskConfig:
    name: str
    objects: dict[str, ObjectConfig]
    regions: dict[str, RegionConfig]
    variants: dict[str, dict[str, dict[str, Any]]]
    params: dict[str, Any] = field(default_factory=dict)

    def objects_for(self, variant: str) -> dict[str, ObjectConfig]:
        """Objects with the variant's per-object overrides applied."""
        if variant not in self.variants:
            raise LabConfigError(f'task {self.name!r}: unknown variant {variant!r}; '
                             f'allowed: {sorted(self.variants)}')
        out = copy.deepcopy(self.objects)
        for obj_name, override in self.variants[variant].items():
            if obj_name not in out:
                raise LabConfigKeyError(f'task {self.name!r} variant {variant!r}: '
                               f'unknown object {obj_name!r}')
            raw = {**_object_raw(out[obj_name]), **override}
            reader = _Reader(raw, f'task {self.name}', f'variants.{variant}.{obj_name}')
            out[obj_name] = _parse_object(reader, obj_name)
        return out


@dataclass
class LabConfig:
    source: str
    robot_path: str | None
    gripper_joints: list[str]
    timestep: float
    table: TableConfig
    cameras: dict[str, CameraConfig]
    lights: list[LightConfig]
    tasks: dict[str, TaskConfig]

    @classmethod
    def load(cls, path: str | Path) -> 'LabConfig':
        return cls.from_dict(load_yaml(path, 'lab config'), str(path))

    @classmethod
    def from_dict(cls, data: Any, source: str = '<dict>') -> 'LabConfig':
        top = _Reader(data, source)
        robot = _Reader(top.get('robot', {}) or {}, source, 'robot')
        robot_path = robot.get('path', None)
        if robot_path is not None:
            robot_path = str(robot_path)
            if not Path(robot_path).is_absolute():
                robot_path = str((Path(source).parent / robot_path).resolve())
        physics = top.sub('physics')
        timestep = physics.num('timestep', lo=1e-5, hi=0.002)
        cams = top.sub('cameras')
        cameras = {name: _parse_camera(cams.sub(name), name) for name in cams.data}
        if not cameras:
            raise LabConfigError(f'{source}: cameras must define at least one camera')
        lights_raw = top.get('lights', [])
        if not isinstance(lights_raw, list):
            raise LabConfigError(f'{source}: lights must be a list')
        lights = [_parse_light(_Reader(item, source, f'lights[{i}]'))
                  for i, item in enumerate(lights_raw)]
        tasks_r = top.sub('tasks')
        tasks = {name: _parse_task(tasks_r.sub(name), name) for name in tasks_r.data}
        return cls(source, robot_path, [str(g) for g in robot.get('gripper_joints',
                                                                  ['finger_left', 'finger_right'])],
                   timestep, _parse_table(top.sub('table')), cameras, lights, tasks)


def _parse_table(r: _Reader) -> TableConfig:
    return TableConfig(size=r.vec('size', 2), center=r.vec('center', 2, [0.35, 0.0]),
                       thickness=r.num('thickness', 0.04, lo=0.005), height=r.num('height', lo=0.1),
                       color=r.vec('color', (3, 4)))


def look_at_rotation(position: np.ndarray, target: np.ndarray,
                     up: np.ndarray = np.array([0.0, 0.0, 1.0])) -> np.ndarray:
    """OpenCV camera axes (columns x right, y down, z forward) looking from position at target."""
    z = np.asarray(target, float) - np.asarray(position, float)
    norm = np.linalg.norm(z)
    if norm < 1e-9:
        raise ValueError('look_at target coincides with the camera position')
    z /= norm
    x = np.cross(z, up)
    if np.linalg.norm(x) < 1e-6:
        raise ValueError('camera looks straight along the up vector; give a rotation instead')
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    return np.column_stack([x, y, z])


def _parse_camera(r: _Reader, name: str) -> CameraConfig:
    width, height = int(r.num('width', lo=8)), int(r.num('height', lo=8))
    position = r.vec('position', 3)
    if r.has('look_at'):
        try:
            rotation = look_at_rotation(position, r.vec('look_at', 3))
        except LabConfigError:
            raise
        except ValueError as exc:
            raise LabConfigError(f'{r.source}: {r.where}.look_at: {exc}') from None
    elif r.has('rotation'):
        rotation = r.vec('rotation', 9).reshape(3, 3)
        if not np.allclose(rotation.T @ rotation, np.eye(3), atol=1e-4):
            raise LabConfigError(f'{r.source}: {r.where}.rotation is not a rotation matrix')
    else:
        raise LabConfigKeyError(f'{r.source}: {r.where} needs look_at or rotation')
    dist = r.vec('distortion', 5, [0, 0, 0, 0, 0])
    return CameraConfig(name, width, height, r.num('fx', lo=1), r.num('fy', lo=1),
                        r.num('cx', lo=0, hi=width), r.num('cy', lo=0, hi=height), dist,
                        position, rotation)


def _parse_light(r: _Reader) -> LightConfig:
    return LightConfig(r.vec('position', 3), r.vec('direction', 3, [0, 0, -1]),
                       r.vec('diffuse', 3, [0.7, 0.7, 0.7]), bool(r.get('castshadow', True)))


def _object_raw(obj: ObjectConfig) -> dict[str, Any]:
    raw = {'shape': obj.shape, 'size': obj.size.tolist(), 'color': obj.color.tolist(),
           'mass': obj.mass, 'friction': obj.friction}
    if obj.neck is not None:
        raw['neck'] = obj.neck.tolist()
    return raw


def _parse_object(r: _Reader, name: str) -> ObjectConfig:
    shape = str(r.get('shape'))
    if shape not in SHAPES:
        raise LabConfigError(f'{r.source}: {r.where}.shape={shape!r}; allowed: {list(SHAPES)}')
    nsize = {'box': 3, 'cylinder': 2, 'sphere': 1}[shape]
    size = r.vec('size', (1, 2, 3))
    if size.size < nsize:
        raise LabConfigError(f'{r.source}: {r.where}.size needs {nsize} half-sizes for a {shape}')
    size = size[:nsize]
    if np.any(size <= 0):
        raise LabConfigError(f'{r.source}: {r.where}.size must be positive')
    neck = r.vec('neck', 2) if r.get('neck', None) is not None else None
    return ObjectConfig(name, shape, size, r.vec('color', (3, 4))[:3], r.num('mass', lo=1e-4),
                        r.num('friction', 1.0, lo=0.0), neck)


def _parse_region(r: _Reader) -> RegionConfig:
    x, y = r.vec('x', 2), r.vec('y', 2)
    if x[0] >= x[1] or y[0] >= y[1]:
        raise LabConfigError(f'{r.source}: {r.where} needs min < max for x and y')
    return RegionConfig(x, y)


def _parse_task(r: _Reader, name: str) -> TaskConfig:
    objs = r.sub('objects')
    objects = {o: _parse_object(objs.sub(o), o) for o in objs.data}
    regs = r.sub('regions')
    regions = {k: _parse_region(regs.sub(k)) for k in ('id', 'ood')}
    if regions['id'].overlaps(regions['ood']):
        raise LabConfigError(f'{r.source}: {r.where}.regions id and ood must be disjoint')
    variants_raw = r.get('variants', {'default': {}}) or {'default': {}}
    if not isinstance(variants_raw, dict) or 'default' not in variants_raw:
        raise LabConfigError(
            f'{r.source}: {r.where}.variants must be a mapping with a "default" entry')
    variants = {str(k): dict(v or {}) for k, v in variants_raw.items()}
    task = TaskConfig(name, objects, regions, variants, dict(r.get('params', {}) or {}))
    for variant in variants:        # validate overrides now, not at reset time
        try:
            task.objects_for(variant)
        except KeyError as exc:
            raise LabConfigKeyError(
                f'{r.source}: {r.where}.variants.{variant}: {exc.args[0]}') from exc
    return task
