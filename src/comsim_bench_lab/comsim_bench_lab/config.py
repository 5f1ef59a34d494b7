"""Lab description (config/bench_lab/lab.yaml) as validated dataclasses.

Validation happens here, once, so a bad YAML fails at load with the file and key named
instead of deep inside MuJoCo compilation. The `*Entry` dataclasses are the file as written
(read by comsim_core.config.load_config); the `*Config` ones are what the lab runs on (numpy
arrays, a camera rotation instead of its look-at point, names from the keys).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from comsim_core.config import field_error, load_config
from comsim_core.errors import UserError

Shape = Literal['box', 'cylinder', 'sphere']
Vec2 = tuple[float, float]
Vec3 = tuple[float, float, float]
SIZES = {'box': 3, 'cylinder': 2, 'sphere': 1}   # MuJoCo half-sizes per shape


class LabConfigError(UserError, ValueError):
    """A lab config value that cannot work; the message names the file and the key."""


class LabConfigKeyError(LabConfigError, KeyError):
    """A key the lab config needs but lacks (a KeyError for callers that look keys up)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ''


def _within(entry: object, key: str, lo: float | None = None, hi: float | None = None) -> None:
    value = getattr(entry, key)
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise field_error(LabConfigError, key, f'{value} outside [{lo}, {hi}]')


def _rgb(entry: object, key: str) -> None:
    if len(getattr(entry, key)) not in (3, 4):
        raise field_error(LabConfigError, key, f'needs 3 or 4 numbers (RGB[A]), got '
                                               f'{list(getattr(entry, key))}')


@dataclass(frozen=True)
class RobotEntry:
    path: str | None = None    # null: the ComSim arm; relative to the lab file
    gripper_joints: list[str] = field(default_factory=lambda: ['finger_left', 'finger_right'])


@dataclass(frozen=True)
class PhysicsEntry:
    timestep: float

    def __post_init__(self) -> None:
        _within(self, 'timestep', 1e-5, 0.002)


@dataclass(frozen=True)
class TableEntry:
    size: Vec2                 # full x, y extent, m
    height: float              # table top above the floor, m
    color: tuple[float, ...]
    center: Vec2 = (0.35, 0.0)
    thickness: float = 0.04

    def __post_init__(self) -> None:
        _within(self, 'height', lo=0.1)
        _within(self, 'thickness', lo=0.005)
        _rgb(self, 'color')


@dataclass(frozen=True)
class CameraEntry:
    width: int
    height: int
    fx: float
    fy: float
    cx: float
    cy: float
    position: Vec3
    distortion: tuple[float, float, float, float, float] = (0.0, 0.0, 0.0, 0.0, 0.0)
    look_at: Vec3 | None = None
    rotation: tuple[float, ...] | None = None   # 3x3 row-major, columns = OpenCV camera axes

    def __post_init__(self) -> None:
        for key in ('width', 'height'):
            _within(self, key, lo=8)
        for key in ('fx', 'fy'):
            _within(self, key, lo=1)
        _within(self, 'cx', 0, self.width)
        _within(self, 'cy', 0, self.height)
        if self.look_at is not None:
            try:
                look_at_rotation(np.array(self.position), np.array(self.look_at))
            except ValueError as exc:
                raise field_error(LabConfigError, 'look_at', str(exc)) from None
        elif self.rotation is not None:
            if len(self.rotation) != 9:
                raise field_error(LabConfigError, 'rotation',
                                  f'needs 9 numbers, got {len(self.rotation)}')
            rot = np.reshape(self.rotation, (3, 3))
            if not np.allclose(rot.T @ rot, np.eye(3), atol=1e-4):
                raise field_error(LabConfigError, 'rotation', 'is not a rotation matrix')
        else:
            raise LabConfigKeyError('needs look_at or rotation')


@dataclass(frozen=True)
class LightEntry:
    position: Vec3
    direction: Vec3 = (0.0, 0.0, -1.0)
    diffuse: Vec3 = (0.7, 0.7, 0.7)
    castshadow: bool = True


@dataclass(frozen=True)
class ObjectEntry:
    shape: Shape
    size: tuple[float, ...]    # MuJoCo half-sizes: box (hx,hy,hz), cylinder (r, half_h), sphere (r)
    color: tuple[float, ...]
    mass: float
    friction: float = 1.0
    neck: Vec2 | None = None   # (radius, half_height) cylinder on top (bottles)

    def __post_init__(self) -> None:
        if not SIZES[self.shape] <= len(self.size) <= 3:
            raise field_error(LabConfigError, 'size', f'needs {SIZES[self.shape]} half-sizes '
                                                      f'for a {self.shape}, got {list(self.size)}')
        if min(self.size[:SIZES[self.shape]]) <= 0:
            raise field_error(LabConfigError, 'size', f'must be positive, got {list(self.size)}')
        _rgb(self, 'color')
        _within(self, 'mass', lo=1e-4)
        _within(self, 'friction', lo=0.0)


@dataclass(frozen=True)
class RegionEntry:
    x: Vec2    # (min, max)
    y: Vec2

    def __post_init__(self) -> None:
        if self.x[0] >= self.x[1] or self.y[0] >= self.y[1]:
            raise LabConfigError(f'needs min < max for x and y, got x {list(self.x)}, '
                                 f'y {list(self.y)}')


@dataclass(frozen=True)
class RegionsEntry:
    id: RegionEntry     # where recorded episodes place the objects
    ood: RegionEntry    # out of that distribution: disjoint from it

    def __post_init__(self) -> None:
        if _region(self.id).overlaps(_region(self.ood)):
            raise LabConfigError('id and ood must be disjoint')


@dataclass(frozen=True)
class TaskEntry:
    objects: dict[str, ObjectEntry]
    regions: RegionsEntry
    variants: dict[str, dict[str, dict[str, Any]]] = field(
        default_factory=lambda: {'default': {}})   # variant -> object -> keys to override
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if 'default' not in self.variants:
            raise field_error(LabConfigError, 'variants', 'needs a "default" entry')


@dataclass(frozen=True)
class LabFile:
    """lab.yaml as written."""

    physics: PhysicsEntry
    table: TableEntry
    cameras: dict[str, CameraEntry]
    tasks: dict[str, TaskEntry]
    robot: RobotEntry = field(default_factory=RobotEntry)
    lights: list[LightEntry] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.cameras:
            raise field_error(LabConfigError, 'cameras', 'must define at least one camera')


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
        return _apply_variant(self.objects, self.variants[variant], f'task {self.name}',
                              f'variants.{variant}')


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
    def load(cls, path: str | Path) -> LabConfig:
        return cls.from_file(load_config(path, LabFile, what='lab config', error=LabConfigError,
                                         missing_error=LabConfigKeyError), str(path))

    @classmethod
    def from_dict(cls, data: Any, source: str = '<dict>') -> LabConfig:
        return cls.from_file(load_config(data, LabFile, name=source, error=LabConfigError,
                                         missing_error=LabConfigKeyError), source)

    @classmethod
    def from_file(cls, file: LabFile, source: str) -> LabConfig:
        robot_path = file.robot.path
        if robot_path is not None and not Path(robot_path).is_absolute():
            robot_path = str((Path(source).parent / robot_path).resolve())
        t = file.table
        table = TableConfig(np.array(t.size), np.array(t.center), t.thickness, t.height,
                            np.array(t.color))
        lights = [LightConfig(np.array(e.position), np.array(e.direction), np.array(e.diffuse),
                              e.castshadow) for e in file.lights]
        tasks = {name: _task(name, e, source) for name, e in file.tasks.items()}
        return cls(source, robot_path, list(file.robot.gripper_joints), file.physics.timestep,
                   table, {n: _camera(n, e) for n, e in file.cameras.items()}, lights, tasks)


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



def _camera(name: str, e: CameraEntry) -> CameraConfig:
    position = np.array(e.position)
    rotation = (look_at_rotation(position, np.array(e.look_at)) if e.look_at is not None
                else np.reshape(e.rotation, (3, 3)).astype(float))
    return CameraConfig(name, e.width, e.height, e.fx, e.fy, e.cx, e.cy, np.array(e.distortion),
                        position, rotation)


def _object_raw(obj: ObjectConfig) -> dict[str, Any]:
    raw = {'shape': obj.shape, 'size': obj.size.tolist(), 'color': obj.color.tolist(),
           'mass': obj.mass, 'friction': obj.friction}
    if obj.neck is not None:
        raw['neck'] = obj.neck.tolist()
    return raw


def _object(name: str, e: ObjectEntry) -> ObjectConfig:
    return ObjectConfig(name, e.shape, np.array(e.size[:SIZES[e.shape]]), np.array(e.color[:3]),
                        e.mass, e.friction, None if e.neck is None else np.array(e.neck))


def _apply_variant(objects: dict[str, ObjectConfig], overrides: dict[str, dict[str, Any]],
                   name: str, where: str) -> dict[str, ObjectConfig]:
    """`objects` with a variant's overrides; `name` and `where` say where it was written."""
    out = copy.deepcopy(objects)
    for obj_name, override in overrides.items():
        if obj_name not in out:
            raise LabConfigKeyError(f'{name}: {where}: unknown object {obj_name!r}; '
                                    f'the task has {sorted(out)}')
        entry = load_config({**_object_raw(out[obj_name]), **override}, ObjectEntry, name=name,
                            where=f'{where}.{obj_name}', error=LabConfigError,
                            missing_error=LabConfigKeyError)
        out[obj_name] = _object(obj_name, entry)
    return out


def _region(e: RegionEntry) -> RegionConfig:
    return RegionConfig(np.array(e.x), np.array(e.y))


def _task(name: str, e: TaskEntry, source: str) -> TaskConfig:
    task = TaskConfig(name, {o: _object(o, oe) for o, oe in e.objects.items()},
                      {'id': _region(e.regions.id), 'ood': _region(e.regions.ood)},
                      copy.deepcopy(e.variants), dict(e.params))
    for variant, overrides in task.variants.items():   # check overrides now, not at reset time
        _apply_variant(task.objects, overrides, source, f'tasks.{name}.variants.{variant}')
    return task
