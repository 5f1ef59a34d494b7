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

import numpy as np
import yaml

from comsim_core.errors import UserError, load_yaml

FORMAT = 'comsim-twin-scene/1'
SHAPES = ('box', 'cylinder', 'bottle')
MARKER_SHAPES = ('rect',)
TEXTURE_KINDS = ('none', 'checker', 'noise', 'stripes')
TEXTURE_KEYS = ('kind', 'color2', 'scale')


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
    quat: list[float] = field(default_factory=lambda: [1.0, 0.0, 0.0, 0.0])
    mass: float = 0.1
    friction: float = 1.0


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


def parse_marker(name: str, m: object, source: str = '<dict>') -> TwinMarker:
    """A TwinMarker from its YAML mapping, with errors that name the bad field."""
    where = f'{source}: markers.{name}'
    if not isinstance(m, dict):
        raise SceneError(f'{where}: expected a mapping')
    shape = m.get('shape', 'rect')
    if shape not in MARKER_SHAPES:
        raise SceneError(f'{where}.shape {shape!r} not in {MARKER_SHAPES}')
    try:
        size = [float(x) for x in m['size']]
        color = [float(x) for x in m['color']]
        pos = [float(x) for x in m['pos']]
        yaw = float(m.get('yaw', 0.0))
    except KeyError as exc:
        raise SceneError(f'{where}: missing key {exc.args[0]!r}') from None
    except (TypeError, ValueError):
        raise SceneError(f'{where}: size, color, pos and yaw must be numbers') from None
    if len(size) != 2 or min(size) <= 0 or len(color) != 3 or len(pos) != 2:
        raise SceneError(f'{where}: needs size [half x, half y] > 0, color [r, g, b], '
                         f'pos [x, y] (got size {size}, color {color}, pos {pos})')
    return TwinMarker(name, size, color, pos, yaw, shape)


@dataclass
class TableTexture:
    """A procedural pattern on the table top (domain randomisation): the table colour and
    color2, in cells of `scale` metres (checker square, stripe width, noise speck). Kind 'none'
    renders the flat table colour, exactly as a scene without a texture."""
    kind: str = 'none'
    color2: list[float] = field(default_factory=lambda: [0.3, 0.25, 0.2])   # RGB in [0, 1]
    scale: float = 0.05

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


def parse_table_texture(t: object, source: str = '<dict>') -> TableTexture:
    """A TableTexture from its YAML mapping; unknown keys are errors so a typo is not
    silently rendered flat."""
    where = f'{source}: table.texture'
    if not isinstance(t, dict):
        raise SceneError(f'{where}: expected a mapping with keys {TEXTURE_KEYS}')
    unknown = sorted(set(map(str, t)) - set(TEXTURE_KEYS))
    if unknown:
        raise SceneError(f'{where}: unknown keys {unknown}; known: {TEXTURE_KEYS}')
    if 'kind' not in t:
        raise SceneError(f"{where}: missing key 'kind' (one of {TEXTURE_KINDS})")
    default = TableTexture()
    color2 = t.get('color2', default.color2)
    if not isinstance(color2, (list, tuple)):
        raise SceneError(f'{where}.color2 needs [r, g, b] in [0, 1], got {color2!r}')
    return TableTexture(t['kind'], list(color2), t.get('scale', default.scale)).check(where)


@dataclass
class TwinScene:
    robot_model: str = ''                          # '' = the ComSim arm
    table_size: list[float] = field(default_factory=lambda: [0.6, 0.8])  # half-extents x, y
    table_center: list[float] = field(default_factory=lambda: [0.4, 0.0])
    table_color: list[float] = field(default_factory=lambda: [0.6, 0.5, 0.4])
    background_color: list[float] = field(default_factory=lambda: [0.2, 0.2, 0.2])
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
    def from_dict(cls, data: dict, source: str = '<dict>') -> 'TwinScene':
        def need(d, key, where):
            if not isinstance(d, dict) or key not in d:
                raise SceneError(f'{source}: missing key {where}{key!r}')
            return d[key]

        def nums(value, where, n=None):
            """A list of numbers, or a SceneError naming the key and what was found."""
            ok = (isinstance(value, (list, tuple)) and (n is None or len(value) == n)
                  and all(isinstance(x, (int, float)) and not isinstance(x, bool)
                          for x in value))
            if not ok:
                count = f'{n} ' if n is not None else ''
                raise SceneError(f'{source}: {where}: expected a list of {count}numbers, '
                                 f'got {value!r}')
            return [float(x) for x in value]

        def num(value, where, kind=float):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or (
                    kind is int and value != int(value)):
                what = 'an integer' if kind is int else 'a number'
                raise SceneError(f'{source}: {where}: expected {what}, got {value!r}')
            return kind(value)

        if not isinstance(data, dict):
            raise SceneError(f'{source}: not a twin scene (expected a mapping)')
        if data.get('format') != FORMAT:
            raise SceneError(f'{source}: format is {data.get("format")!r}, expected {FORMAT!r}')
        table = need(data, 'table', '')
        cameras = {}
        for name, c in (data.get('cameras') or {}).items():
            where = f'cameras.{name}.'
            K = np.asarray(nums(need(c, 'K', where), f'{where}K', 9))
            D = np.asarray(nums(need(c, 'D', where), f'{where}D', 5))
            T = np.asarray(nums(need(c, 'T_base_camera', where), f'{where}T_base_camera', 16))
            cameras[name] = TwinCamera(name, num(need(c, 'width', where), f'{where}width', int),
                                       num(need(c, 'height', where), f'{where}height', int),
                                       K.reshape(3, 3), D, T.reshape(4, 4), c.get('topic', ''))
        objects = {}
        for name, o in (data.get('objects') or {}).items():
            where = f'objects.{name}.'
            shape = need(o, 'shape', where)
            if shape not in SHAPES:
                raise SceneError(f'{source}: objects.{name}.shape {shape!r} not in {SHAPES}')
            objects[name] = TwinObject(
                name, shape, nums(need(o, 'size', where), f'{where}size'),
                nums(need(o, 'color', where), f'{where}color', 3),
                nums(need(o, 'pos', where), f'{where}pos', 3),
                nums(o.get('quat', [1, 0, 0, 0]), f'{where}quat', 4),
                num(o.get('mass', 0.1), f'{where}mass'),
                num(o.get('friction', 1.0), f'{where}friction'))
        markers = {str(n): parse_marker(str(n), m, source)
                   for n, m in (data.get('markers') or {}).items()}
        clash = sorted(set(markers) & set(objects))
        if clash:
            raise SceneError(f'{source}: names {clash} are both objects and markers')
        texture = (parse_table_texture(table['texture'], source)
                   if table.get('texture') is not None else None)
        return cls(robot_model=data.get('robot_model', ''),
                   table_size=nums(need(table, 'size', 'table.'), 'table.size', 2),
                   table_center=nums(table.get('center', [0.4, 0.0]), 'table.center', 2),
                   table_color=nums(need(table, 'color', 'table.'), 'table.color', 3),
                   background_color=nums(data.get('background_color', [0.2, 0.2, 0.2]),
                                         'background_color', 3),
                   cameras=cameras, objects=objects, task=data.get('task', ''),
                   markers=markers, provenance=data.get('provenance') or {},
                   table_texture=texture)

    @classmethod
    def load(cls, path: str | Path) -> 'TwinScene':
        return cls.from_dict(load_yaml(path, 'twin scene'), str(path))

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
