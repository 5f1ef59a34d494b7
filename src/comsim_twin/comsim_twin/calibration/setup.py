"""The lab's calibration setup (config/twin/calibration.yaml): the board and where it is laid
on the table for the extrinsic views. Public lab knowledge, measured by the lab, not learnt."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from comsim_core.config import field_error, load_config

from .board import ChessBoard
from .errors import CalibrationError

DEFAULT_SETUP = 'config/twin/calibration.yaml'


@dataclass
class CalibrationSetup:
    board: ChessBoard
    placements: dict[str, np.ndarray] = field(default_factory=dict)   # name -> T_base_board
    source: str = '<dict>'

    def placement(self, name: str) -> np.ndarray:
        if name not in self.placements:
            raise CalibrationError(f'{self.source}: unknown board placement {name!r}; '
                                   f'known: {sorted(self.placements)}')
        return self.placements[name]


@dataclass(frozen=True)
class PlacementEntry:
    """One place on the table where the board lies flat: its first inner corner's (x, y) in
    the base frame and the yaw of its x axis about +z."""

    name: str
    xy: tuple[float, float]
    yaw: float


@dataclass(frozen=True)
class CalibrationSetupFile:
    """config/twin/calibration.yaml as written; its annotations are the schema."""

    board: ChessBoard
    table_top_z: float = 0.0
    placements: list[PlacementEntry] = field(default_factory=list)

    def __post_init__(self) -> None:
        names = [p.name for p in self.placements]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:   # a view names its placement: two poses under one name are ambiguous
            raise field_error(CalibrationError, 'placements',
                              f'placement name(s) {", ".join(twice)} given more than once')

    def setup(self, source: str) -> CalibrationSetup:
        """The setup in poses: the printed face lies one board thickness above the table."""
        z = self.table_top_z + self.board.thickness
        return CalibrationSetup(self.board, {p.name: flat_board_pose(*p.xy, z, p.yaw)
                                             for p in self.placements}, source)


def flat_board_pose(x: float, y: float, z: float, yaw: float) -> np.ndarray:
    """T_base_board of a board lying printed face up: x axis at ``yaw`` about +z, z axis down
    (into the printed face), origin (first inner corner) at (x, y, z)."""
    c, s = np.cos(yaw), np.sin(yaw)
    T = np.eye(4)
    T[:3, :3] = np.column_stack([[c, s, 0.0], [s, -c, 0.0], [0.0, 0.0, -1.0]])
    T[:3, 3] = [x, y, z]
    return T


def load_calibration_setup(path: str | Path) -> CalibrationSetup:
    path = Path(path)
    if not path.exists():
        raise CalibrationError(f'calibration setup {path} not found')
    file = load_config(path, CalibrationSetupFile, what='calibration setup',
                       error=CalibrationError)
    return file.setup(str(path))
