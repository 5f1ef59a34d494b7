"""The lab's calibration setup (config/twin/calibration.yaml): the board and where it is laid
on the table for the extrinsic views. Public lab knowledge, measured by the lab, not learnt."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml

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


def flat_board_pose(x: float, y: float, z: float, yaw: float) -> np.ndarray:
    """T_base_board of a board lying printed face up: x axis at ``yaw`` about +z, z axis down
    (into the printed face), origin (first inner corner) at (x, y, z)."""
    c, s = np.cos(yaw), np.sin(yaw)
    T = np.eye(4)
    T[:3, :3] = np.column_stack([[c, s, 0.0], [s, -c, 0.0], [0.0, 0.0, -1.0]])
    T[:3, 3] = [x, y, z]
    return T


def setup_from_dict(data: dict, source: str = '<dict>') -> CalibrationSetup:
    if not isinstance(data, dict) or 'board' not in data:
        raise CalibrationError(f'{source}: missing key board')
    board = ChessBoard.from_dict(data['board'], source)
    z = float(data.get('table_top_z', 0.0)) + board.thickness
    placements: dict[str, np.ndarray] = {}
    for i, p in enumerate(data.get('placements') or []):
        try:
            placements[str(p['name'])] = flat_board_pose(float(p['xy'][0]), float(p['xy'][1]),
                                                         z, float(p['yaw']))
        except (KeyError, TypeError, IndexError, ValueError) as exc:
            raise CalibrationError(f'{source}: placements[{i}] needs name, xy [x, y] and yaw '
                                   f'({type(exc).__name__}: {exc})') from None
    return CalibrationSetup(board, placements, source)


def load_calibration_setup(path: str | Path) -> CalibrationSetup:
    path = Path(path)
    if not path.exists():
        raise CalibrationError(f'calibration setup {path} not found')
    return setup_from_dict(yaml.safe_load(path.read_text(encoding='utf-8')), str(path))
