"""The twin scene: everything the twin knows about the lab, learnt the way a lab learns it.

Cameras come from calibration (`comsim_twin.calibration`), objects from alignment
(`comsim_twin.alignment`) or a generation layout, sizes from the lab's measured object sheet
(`config/twin/objects.yaml`). Nothing here is read from the bench lab's configuration; a test
checks that no comsim_twin module imports comsim_bench_lab.

Stored as YAML (`format: comsim-twin-scene/1`), so a lab can inspect and hand-correct it.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np
import yaml

from comsim_core.config import field_error, load_config
from comsim_core.errors import UserError, load_yaml

FORMAT = 'comsim-twin-scene/1'
Shape = Literal['box', 'cylinder', 'bottle']
TextureKind = Literal['none', 'checker', 'noise', 'stripes']
TEXTURE_KINDS = get_args(TextureKind)
Vec2 = tuple[float, float]
Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]
# defaults shared by scenes built in code and scene files that leave the key out
TABLE_CENTER = (0.4, 0.0)
BACKGROUND_COLOR = (0.2, 0.2, 0.2)
IDENTITY_QUAT = (1.0, 0.0, 0.0, 0.0)
OBJECT_MASS = 0.1
OBJECT_FRICTION = 1.0
TEXTURE_COLOR2 = (0.3, 0.25, 0.2)
TEXTURE_SCALE = 0.05


class SceneError(UserError, ValueError):
    """A twin scene file that is missing keys or holds impossible values."""


@dataclass
class TwinCamera:
    """A calibrated camera: OpenCV intrinsics/distortion, pose of the camera in the base frame
    (OpenCV optical frame: x right, y down, z forward)."""
    name: str
    width: int
    height: int
    K: np.ndarray            # (3, 3)
    D: np.ndarray            # (5,) plumb_bob k1 k2 p1 p2 k3
    T_base_camera: np.ndarray  # (4, 4)
    topic: str = ''          # image topic in recorded episodes, e.g. /cameras/front/image_raw

    def to_dict(self) -> dict:
        return {'width': int(self.width), 'height': int(self.height),
                'K': np.asarray(self.K, float).ravel().tolist(),
                'D': np.asarray(self.D, float).ravel().tolist(),
                'T_base_camera': np.asarray(self.T_base_camera, float).ravel().tolist(),
                'topic': self.topic}


@dataclass
class TwinObject:
    """A rigid object on the table. size: box half-extents (3); cylinder/bottle radius and
    half-height (2). pos: centre in the base frame; quat: w x y z."""
    name: str
    shape: str
    size: list[float]
    color: list[float]                 # RGB in [0, 1]
    pos: list[float]
    quat: list[float] = field(default_factory=lambda: list(IDENTITY_QUAT))
    mass: float = OBJECT_MASS
    friction: float = OBJECT_FRICTION


@dataclass
class TwinMarker:
    """A flat, visual-only mark on the table top (tape, a drawn target zone): seen by the
    cameras, never touched by physics. size: half-extents x, y; pos: centre x, y on the table."""
    name: str
    size: list[float]
    color: list[float]                 # RGB in [0, 1]
    pos: list[float]
    yaw: float = 0.0
    shape: str = 'rect'

    def to_dict(self) -> dict:
        return {'shape': self.shape, 'size': [float(v) for v in self.size],
                'color': [float(v) for v in self.color], 'pos': [float(v) for v in self.pos],
                'yaw': float(self.yaw)}


@dataclass
class TableTexture:
    """A procedural pattern on the table top (domain randomisation): the table colour and
    color2, in cells of `scale` metres (checker square, stripe width, noise speck). Kind 'none'
    renders the flat table colour, exactly as a scene without a texture."""
    kind: str = 'none'
    color2: list[float] = field(default_factory=lambda: list(TEXTURE_COLOR2))   # RGB in [0, 1]
    scale: float = TEXTURE_SCALE

    def to_dict(self) -> dict:
        return {'kind': self.kind, 'color2': [float(v) for v in self.color2],
                'scale': float(self.scale)}

    def check(self, where: str = 'table.texture') -> 'TableTexture':
        """Raise SceneError naming the bad field; scenes built in code get the same checks as
        loaded ones."""
        if self.kind not in TEXTURE_KINDS:
            raise SceneError(f'{where}.kind {self.kind!r} not in {TEXTURE_KINDS}')
        try:
            color2 = [float(v) for v in self.color2]
            scale = float(self.scale)
        except (TypeError, ValueError):
            raise SceneError(f'{where}: color2 and scale must be numbers (got color2 '
                             f'{self.color2!r}, scale {self.scale!r})') from None
        if len(color2) != 3 or not all(0.0 <= v <= 1.0 for v in color2):
            raise SceneError(f'{where}.color2 needs [r, g, b] in [0, 1], got {color2}')
        if not (np.isfinite(scale) and scale > 0):
            raise SceneError(f'{where}.scale must be a positive length in metres, got {scale}')
        self.color2, self.scale = color2, scale
        return self


@dataclass
class TwinScene:
    robot_model: str = ''                          # '' = the ComSim arm
    table_size: list[float] = field(default_factory=lambda: [0.6, 0.8])  # half-extents x, y
    table_center: list[float] = field(default_factory=lambda: list(TABLE_CENTER))
    table_color: list[float] = field(default_factory=lambda: [0.6, 0.5, 0.4])
    background_color: list[float] = field(default_factory=lambda: list(BACKGROUND_COLOR))
    cameras: dict[str, TwinCamera] = field(default_factory=dict)
    objects: dict[str, TwinObject] = field(default_factory=dict)
    task: str = ''
    markers: dict[str, TwinMarker] = field(default_factory=dict)   # visual-only table marks
    provenance: dict = field(default_factory=dict)  # where each part came from
    table_texture: TableTexture | None = None       # None: flat table colour

    # -- YAML ---------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {'format': FORMAT, 'task': self.task, 'robot_model': self.robot_model,
                'table': {'size': list(self.table_size), 'center': list(self.table_center),
                          'color': list(self.table_color),
                          **({'texture': self.table_texture.to_dict()}
                             if self.table_texture is not None else {})},
                'background_color': list(self.background_color),
                'cameras': {n: c.to_dict() for n, c in self.cameras.items()},
                'objects': {n: {k: v for k, v in asdict(o).items() if k != 'name'}
                            for n, o in self.objects.items()},
                **({'markers': {n: m.to_dict() for n, m in self.markers.items()}}
                   if self.markers else {}),
                'provenance': self.provenance}

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f'.{path.name}.tmp')
        tmp.write_text(yaml.safe_dump(_plain(self.to_dict()), sort_keys=False))
        tmp.replace(path)
        return path

    @classmethod
    def from_dict(cls, data: Any, source: str = '<dict>') -> TwinScene:
        if not isinstance(data, dict):
            raise SceneError(f'{source}: not a twin scene (expected a mapping)')
        if data.get('format') != FORMAT:
            raise SceneError(f'{source}: format is {data.get("format")!r}, expected {FORMAT!r}')
        file = load_config({k: v for k, v in data.items() if k != 'format'}, SceneFile,
                           name=source, error=SceneError)
        return file.scene(source)

    @classmethod
    def load(cls, path: str | Path) -> TwinScene:
        return cls.from_dict(load_yaml(path, 'twin scene'), str(path))


def _count(entry: object, key: str, n: int) -> None:
    value = getattr(entry, key)
    if len(value) != n:
        raise field_error(SceneError, key, f'expected a list of {n} numbers, got {list(value)}')


def _positive(entry: object, key: str) -> None:
    value = getattr(entry, key)
    if min(value, default=0.0) <= 0:
        raise field_error(SceneError, key, f'must be positive, got {list(value)}')


@dataclass(frozen=True)
class CameraEntry:
    """One calibrated camera as a scene file writes it (matrices row-major, flat)."""

    width: int
    height: int
    K: list[float]
    D: list[float]
    T_base_camera: list[float]
    topic: str = ''

    def __post_init__(self) -> None:
        for key, n in (('K', 9), ('D', 5), ('T_base_camera', 16)):
            _count(self, key, n)

    def camera(self, name: str) -> TwinCamera:
        return TwinCamera(name, self.width, self.height, np.reshape(self.K, (3, 3)),
                          np.asarray(self.D), np.reshape(self.T_base_camera, (4, 4)), self.topic)


@dataclass(frozen=True)
class ObjectEntry:
    shape: Shape
    size: list[float]
    color: Vec3
    pos: Vec3
    quat: Quat = IDENTITY_QUAT
    mass: float = OBJECT_MASS
    friction: float = OBJECT_FRICTION

    def object(self, name: str) -> TwinObject:
        return TwinObject(name, self.shape, list(self.size), list(self.color), list(self.pos),
                          list(self.quat), self.mass, self.friction)


@dataclass(frozen=True)
class MarkerEntry:
    size: Vec2      # half-extents x, y
    color: Vec3
    pos: Vec2
    yaw: float = 0.0
    shape: Literal['rect'] = 'rect'

    def __post_init__(self) -> None:
        _positive(self, 'size')

    def marker(self, name: str) -> TwinMarker:
        return TwinMarker(name, list(self.size), list(self.color), list(self.pos), self.yaw,
                          self.shape)


@dataclass(frozen=True)
class TextureEntry:
    kind: TextureKind
    color2: Vec3 = TEXTURE_COLOR2
    scale: float = TEXTURE_SCALE


@dataclass(frozen=True)
class TableEntry:
    size: Vec2      # half-extents x, y
    color: Vec3
    center: Vec2 = TABLE_CENTER
    texture: TextureEntry | None = None


@dataclass(frozen=True)
class SceneFile:
    """A scene file as written (its `format` checked before)."""

    table: TableEntry
    task: str = ''
    robot_model: str = ''
    background_color: Vec3 = BACKGROUND_COLOR
    cameras: dict[str, CameraEntry] = field(default_factory=dict)
    objects: dict[str, ObjectEntry] = field(default_factory=dict)
    markers: dict[str, MarkerEntry] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        clash = sorted(set(self.markers) & set(self.objects))
        if clash:
            raise SceneError(f'names {clash} are both objects and markers')

    def scene(self, source: str) -> TwinScene:
        t = self.table.texture
        texture = (None if t is None else
                   TableTexture(t.kind, list(t.color2), t.scale).check(f'{source}: table.texture'))
        return TwinScene(self.robot_model, list(self.table.size), list(self.table.center),
                         list(self.table.color), list(self.background_color),
                         {n: c.camera(n) for n, c in self.cameras.items()},
                         {n: o.object(n) for n, o in self.objects.items()}, self.task,
                         {n: m.marker(n) for n, m in self.markers.items()},
                         dict(self.provenance), texture)


def _plain(value):
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    return value
