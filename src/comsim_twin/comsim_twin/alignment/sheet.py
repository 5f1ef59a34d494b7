"""The lab's measured object sheet (`config/twin/objects.yaml`): sizes and nominal colours.

What a lab measures with calipers, never read from the bench lab. Colour names map to reference
RGB used only to match image blobs to sheet entries; the twin's colours come from the images.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml

from comsim_twin.alignment.errors import AlignmentError
from comsim_twin.scene import SHAPES

FORMAT = 'comsim-object-sheet/1'
MARKER_HALF_HEIGHT = 0.0004   # tape thickness / 2: what a marker's stand-in box stands
DEFAULT_SHEET = Path(__file__).resolve().parents[4] / 'config' / 'twin' / 'objects.yaml'


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
    table_half_size: tuple[float, float] = (0.6, 0.5)
    table_center: tuple[float, float] = (0.35, 0.0)
    table_colour: str = ''
    workspace: tuple[tuple[float, float], tuple[float, float]] = ((-10.0, 10.0), (-10.0, 10.0))
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
    path = Path(path)
    if not path.exists():
        raise AlignmentError(f'object sheet {path} not found')
    data = yaml.safe_load(path.read_text())
    return parse_sheet(data, str(path))


def parse_sheet(data: object, source: str = '<sheet>') -> ObjectSheet:
    if not isinstance(data, dict) or data.get('format') != FORMAT:
        raise AlignmentError(f'{source}: not an object sheet (expected format: {FORMAT})')
    colours = {}
    for name, rgb in (data.get('colours') or {}).items():
        arr = np.asarray(rgb, float).reshape(-1)
        if arr.size != 3 or arr.min() < 0 or arr.max() > 1:
            raise AlignmentError(f'{source}: colours.{name} needs 3 values in [0, 1]')
        colours[str(name)] = tuple(float(v) for v in arr)
    table = data.get('table') or {}
    sheet = ObjectSheet(source, colours,
                        tuple(float(v) for v in table.get('size', (0.6, 0.5))),
                        tuple(float(v) for v in table.get('center', (0.35, 0.0))),
                        str(table.get('colour', '')))
    ws = data.get('workspace')
    if ws is not None:
        try:
            sheet.workspace = ((float(ws['x'][0]), float(ws['x'][1])),
                               (float(ws['y'][0]), float(ws['y'][1])))
        except (TypeError, KeyError, IndexError, ValueError):
            raise AlignmentError(f'{source}: workspace needs x: [min, max], y: [min, max]'
                                 ) from None
    for task, variants in (data.get('tasks') or {}).items():
        if not isinstance(variants, dict):
            raise AlignmentError(f'{source}: tasks.{task} must map variant -> objects')
        sheet.tasks[task] = {v: {n: _parse_object(o, n, f'{source}: tasks.{task}.{v}.{n}',
                                                  colours)
                                 for n, o in (objs or {}).items()}
                             for v, objs in variants.items()}
    for task, marks in (data.get('markers') or {}).items():
        if not isinstance(marks, dict):
            raise AlignmentError(f'{source}: markers.{task} must map marker name -> entry')
        sheet.task_markers[task] = {n: _parse_marker(m, n, f'{source}: markers.{task}.{n}',
                                                     colours)
                                    for n, m in marks.items()}
        clash = sorted(set(sheet.task_markers[task])
                       & {o for v in sheet.tasks.get(task, {}).values() for o in v})
        if clash:
            raise AlignmentError(f'{source}: markers.{task}: {clash} are also object names')
    return sheet


def _parse_marker(m: object, name: str, where: str,
                  colours: dict[str, tuple[float, float, float]]) -> SheetMarker:
    if not isinstance(m, dict):
        raise AlignmentError(f'{where}: expected a mapping')
    if m.get('shape', 'rect') != 'rect':
        raise AlignmentError(f'{where}: shape {m.get("shape")!r} unknown; markers are rect')
    size = tuple(float(v) for v in m.get('size') or ())
    if len(size) != 2 or min(size) <= 0:
        raise AlignmentError(f'{where}: size {list(size)} must be [half x, half y] > 0')
    colour = str(m.get('colour', ''))
    if colour not in colours:
        raise AlignmentError(f'{where}: colour {colour!r} not in the sheet colours '
                             f'{sorted(colours)}')
    return SheetMarker(name, (size[0], size[1]), colour, colours[colour])


def _parse_object(o: object, name: str, where: str,
                  colours: dict[str, tuple[float, float, float]]) -> SheetObject:
    if not isinstance(o, dict):
        raise AlignmentError(f'{where}: expected a mapping')
    shape = o.get('shape')
    if shape not in SHAPES:
        raise AlignmentError(f'{where}: shape {shape!r} not in {SHAPES}')
    size = tuple(float(v) for v in o.get('size') or ())
    if len(size) != (3 if shape == 'box' else 2) or min(size) <= 0:
        raise AlignmentError(f'{where}: size {list(size)} is wrong for a {shape} '
                             f'(box: 3 half-extents; cylinder/bottle: radius, half-height)')
    colour = str(o.get('colour', ''))
    if colour not in colours:
        raise AlignmentError(f'{where}: colour {colour!r} not in the sheet colours '
                             f'{sorted(colours)}')
    neck = o.get('neck')
    neck_t = (float(neck[0]), float(neck[1])) if neck else None
    return SheetObject(name, shape, size, colour, colours[colour], neck_t)
