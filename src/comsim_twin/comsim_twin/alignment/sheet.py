"""The lab's measured object sheet (`config/twin/objects.yaml`): sizes and nominal colours.

What a lab measures with calipers, never read from the bench lab. Colour names map to reference
RGB used only to match image blobs to sheet entries; the twin's colours come from the images.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from comsim_core.config import field_error, load_config
from comsim_core.errors import load_yaml
from comsim_core.paths import resolve_config_path
from comsim_twin.alignment.errors import AlignmentError
from comsim_twin.scene import Shape

FORMAT = 'comsim-object-sheet/1'
MARKER_HALF_HEIGHT = 0.0004   # tape thickness / 2: what a marker's stand-in box stands
DEFAULT_SHEET = Path('config/twin/objects.yaml')   # in the workspace root
TABLE_HALF_SIZE = (0.6, 0.5)
TABLE_CENTER = (0.35, 0.0)
WORKSPACE = ((-10.0, 10.0), (-10.0, 10.0))   # x, y (min, max): anywhere, unless the sheet says
Vec2 = tuple[float, float]
Vec3 = tuple[float, float, float]


@dataclass(frozen=True)
class SheetObject:
    """One measured object. size: box half-extents (3); cylinder/bottle radius, half-height."""
    name: str
    shape: str
    size: tuple[float, ...]
    colour: str
    reference_rgb: tuple[float, float, float]
    neck: tuple[float, float] | None = None

    @property
    def half_height(self) -> float:
        return float(self.size[-1])

    @property
    def twin_shape(self) -> str:
        return self.shape


@dataclass(frozen=True)
class SheetMarker:
    """One measured table mark (tape, a drawn zone): flat on the table, z = 0.

    size: half-extents x, y of the rectangle."""
    name: str
    size: tuple[float, float]
    colour: str
    reference_rgb: tuple[float, float, float]
    shape: str = 'rect'

    def as_object(self) -> SheetObject:
        """A paper-thin box stand-in, so the objects' segmentation and render-and-compare
        (which see only its top face) locate it too."""
        return SheetObject(self.name, 'box', (*self.size, MARKER_HALF_HEIGHT), self.colour,
                           self.reference_rgb)


@dataclass
class ObjectSheet:
    source: str
    colours: dict[str, tuple[float, float, float]]
    table_half_size: tuple[float, float] = TABLE_HALF_SIZE
    table_center: tuple[float, float] = TABLE_CENTER
    table_colour: str = ''
    workspace: tuple[tuple[float, float], tuple[float, float]] = WORKSPACE
    tasks: dict[str, dict[str, dict[str, SheetObject]]] = field(default_factory=dict)
    task_markers: dict[str, dict[str, SheetMarker]] = field(default_factory=dict)

    def markers(self, task: str) -> dict[str, SheetMarker]:
        """The table marks of a task (every variant has the same); none when not listed."""
        return self.task_markers.get(task, {})

    def in_workspace(self, xy: np.ndarray) -> bool:
        (x0, x1), (y0, y1) = self.workspace
        return bool(x0 <= xy[0] <= x1 and y0 <= xy[1] <= y1)

    def objects(self, task: str, variant: str | None = None) -> dict[str, SheetObject]:
        """The objects of one task variant (None = 'default'); clear error when unknown."""
        if task not in self.tasks:
            raise AlignmentError(f'{self.source}: unknown task {task!r}; the sheet has '
                                 f'{sorted(self.tasks)}')
        variant = variant or 'default'
        variants = self.tasks[task]
        if variant not in variants:
            raise AlignmentError(f'{self.source}: task {task!r} has no variant {variant!r}; '
                                 f'the sheet has {sorted(variants)}')
        return variants[variant]


def load_sheet(path: str | Path = DEFAULT_SHEET) -> ObjectSheet:
    """`path` as given, else in the workspace root (any current folder reads the same)."""
    try:
        path = resolve_config_path(path)
    except FileNotFoundError:
        raise AlignmentError(f'object sheet {path} not found') from None
    return parse_sheet(load_yaml(path, 'object sheet'), str(path))


def parse_sheet(data: object, source: str = '<sheet>') -> ObjectSheet:
    if not isinstance(data, dict) or data.get('format') != FORMAT:
        raise AlignmentError(f'{source}: not an object sheet (expected format: {FORMAT})')
    file = load_config({k: v for k, v in data.items() if k != 'format'}, SheetFile, name=source,
                       error=AlignmentError)
    return file.sheet(source)


def _check_colour(colour: str, colours: dict[str, Vec3], where: str) -> Vec3:
    if colour not in colours:
        raise AlignmentError(f'{where}: colour {colour!r} not in the sheet colours '
                             f'{sorted(colours)}')
    return colours[colour]


@dataclass(frozen=True)
class ObjectEntry:
    shape: Shape
    size: tuple[float, ...]    # box: 3 half-extents; cylinder/bottle: radius, half-height
    colour: str
    neck: Vec2 | None = None

    def __post_init__(self) -> None:
        if len(self.size) != (3 if self.shape == 'box' else 2) or min(self.size) <= 0:
            raise AlignmentError(f'size {list(self.size)} is wrong for a {self.shape} '
                                 f'(box: 3 half-extents; cylinder/bottle: radius, half-height)')


@dataclass(frozen=True)
class MarkerEntry:
    size: tuple[float, ...]    # half-extents x, y
    colour: str
    shape: Literal['rect'] = 'rect'

    def __post_init__(self) -> None:
        if len(self.size) != 2 or min(self.size) <= 0:
            raise AlignmentError(f'size {list(self.size)} must be [half x, half y] > 0')


@dataclass(frozen=True)
class TableEntry:
    size: Vec2 = TABLE_HALF_SIZE     # half-extents x, y of the table top
    center: Vec2 = TABLE_CENTER
    colour: str = ''


@dataclass(frozen=True)
class WorkspaceEntry:
    x: Vec2    # (min, max)
    y: Vec2


@dataclass(frozen=True)
class SheetFile:
    """An object sheet as written (its `format` checked before)."""

    colours: dict[str, Vec3] = field(default_factory=dict)      # name -> reference RGB
    table: TableEntry = field(default_factory=TableEntry)
    workspace: WorkspaceEntry | None = None
    tasks: dict[str, dict[str, dict[str, ObjectEntry]]] = field(default_factory=dict)
    markers: dict[str, dict[str, MarkerEntry]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name, rgb in self.colours.items():
            if min(rgb) < 0 or max(rgb) > 1:
                raise field_error(AlignmentError, f'colours.{name}',
                                  f'needs 3 values in [0, 1], got {list(rgb)}')

    def sheet(self, source: str) -> ObjectSheet:
        """The sheet, its colour names checked against `colours`."""
        ws = self.workspace
        sheet = ObjectSheet(source, dict(self.colours), self.table.size, self.table.center,
                            self.table.colour, WORKSPACE if ws is None else (ws.x, ws.y))
        for task, variants in self.tasks.items():
            sheet.tasks[task] = {
                v: {n: SheetObject(n, o.shape, o.size, o.colour,
                                   _check_colour(o.colour, self.colours,
                                                 f'{source}: tasks.{task}.{v}.{n}'), o.neck)
                    for n, o in objs.items()}
                for v, objs in variants.items()}
        for task, marks in self.markers.items():
            sheet.task_markers[task] = {
                n: SheetMarker(n, (m.size[0], m.size[1]), m.colour,
                               _check_colour(m.colour, self.colours,
                                             f'{source}: markers.{task}.{n}'))
                for n, m in marks.items()}
            clash = sorted(set(sheet.task_markers[task])
                           & {o for v in sheet.tasks.get(task, {}).values() for o in v})
            if clash:
                raise AlignmentError(f'{source}: markers.{task}: {clash} are also object names')
        return sheet
