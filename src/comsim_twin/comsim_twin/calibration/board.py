"""The calibration chessboard: its geometry, and finding its corners in an image.

Corners come back in one fixed order (row-major, first inner corner = the corner of black
square (1, 1) in board coordinates), so a table view tells the board's pose, not just its plane:
the board has squares_x + squares_y odd, which makes its 180-degree rotation swap colours.
"""
from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from .errors import CalibrationError

_SUBPIX = (cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT, 60, 1e-4)


@dataclass(frozen=True)
class ChessBoard:
    """A chessboard of squares_x x squares_y squares; corners are the inner ones. Also the
    schema of the `board:` mapping in the calibration setup and a session's episode.yaml."""

    squares_x: int
    squares_y: int
    square_size: float           # metres
    thickness: float = 0.0       # printed face above the surface it lies on
    margin: float = 0.0          # white border outside the squares
    name: str = 'chessboard'

    def __post_init__(self) -> None:
        if self.squares_x < 3 or self.squares_y < 3:
            raise CalibrationError(f'board {self.name!r}: needs at least 3x3 squares, got '
                                   f'{self.squares_x}x{self.squares_y}')
        if (self.squares_x + self.squares_y) % 2 == 0:
            raise CalibrationError(f'board {self.name!r}: squares_x + squares_y must be odd so '
                                   f'the board has one orientation ({self.squares_x}, '
                                   f'{self.squares_y})')
        if self.square_size <= 0:
            raise CalibrationError(f'board {self.name!r}: square_size must be > 0')

    @property
    def pattern_size(self) -> tuple[int, int]:
        """Inner corners (per row, per column), as OpenCV wants them."""
        return self.squares_x - 1, self.squares_y - 1

    @property
    def n_corners(self) -> int:
        return (self.squares_x - 1) * (self.squares_y - 1)

    def object_points(self) -> np.ndarray:
        """(N, 3) float32 corners in the board frame, row-major (row = y index)."""
        cols, rows = self.pattern_size
        ys, xs = np.mgrid[0:rows, 0:cols]
        pts = np.stack([xs.ravel(), ys.ravel(), np.zeros(xs.size)], axis=1) * self.square_size
        return pts.astype(np.float32)

    def to_dict(self) -> dict:
        return {'name': self.name, 'squares_x': self.squares_x, 'squares_y': self.squares_y,
                'square_size': self.square_size, 'thickness': self.thickness,
                'margin': self.margin}


def to_gray(image: np.ndarray) -> np.ndarray:
    """uint8 grey image from RGB (HxWx3) or grey input."""
    image = np.asarray(image)
    if image.ndim == 3:
        image = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
    return image if image.dtype == np.uint8 else np.clip(image, 0, 255).astype(np.uint8)


def find_corners(image: np.ndarray, board: ChessBoard) -> np.ndarray | None:
    """(N, 2) float32 sub-pixel corners in board order, or None when the board is not found."""
    gray = to_gray(image)
    flags = cv2.CALIB_CB_ADAPTIVE_THRESH | cv2.CALIB_CB_NORMALIZE_IMAGE
    found, corners = cv2.findChessboardCorners(gray, board.pattern_size, flags=flags)
    if not found:   # the sector-based detector copes with small, far boards (sub-pixel too)
        for sb_flags in (cv2.CALIB_CB_EXHAUSTIVE | cv2.CALIB_CB_ACCURACY, 0):
            found, corners = cv2.findChessboardCornersSB(gray, board.pattern_size,
                                                         flags=sb_flags)
            if found:
                break
        else:
            return None
    else:
        win = _subpix_window(corners.reshape(-1, 2), board)
        corners = cv2.cornerSubPix(gray, corners, (win, win), (-1, -1), _SUBPIX)
    return orient_corners(gray, corners.reshape(-1, 2).astype(np.float32), board)


def _subpix_window(corners: np.ndarray, board: ChessBoard) -> int:
    """Half window: under half the smallest corner spacing, so it never sees the next corner."""
    grid = corners.reshape(board.pattern_size[1], board.pattern_size[0], 2)
    dx = np.linalg.norm(np.diff(grid, axis=1), axis=2).min()
    dy = np.linalg.norm(np.diff(grid, axis=0), axis=2).min()
    return int(np.clip(np.floor(min(dx, dy) * 0.4), 2, 11))


def orient_corners(gray: np.ndarray, corners: np.ndarray, board: ChessBoard) -> np.ndarray:
    """Put detected corners in board order: right-handed in the image, first quad black."""
    cols, rows = board.pattern_size
    grid = corners.reshape(rows, cols, 2).copy()
    ex, ey = grid[0, 1] - grid[0, 0], grid[1, 0] - grid[0, 0]
    if ex[0] * ey[1] - ex[1] * ey[0] < 0:       # mirrored order (never a real view): fix rows
        grid = grid[::-1]
    if _quad_mean(gray, grid, 0, 0) > _quad_mean(gray, grid, 0, 1):
        grid = grid[::-1, ::-1]                 # 180 degrees: first quad must be the dark one
    return grid.reshape(-1, 2)


def _quad_mean(gray: np.ndarray, grid: np.ndarray, r: int, c: int) -> float:
    quad = np.array([grid[r, c], grid[r, c + 1], grid[r + 1, c + 1], grid[r + 1, c]])
    centre = quad.mean(axis=0)
    shrunk = (centre + 0.5 * (quad - centre)).round().astype(np.int32)
    mask = np.zeros(gray.shape, np.uint8)
    cv2.fillConvexPoly(mask, shrunk, 1)
    if not mask.any():
        x, y = np.clip(centre.round().astype(int), 0, [gray.shape[1] - 1, gray.shape[0] - 1])
        return float(gray[y, x])
    return float(gray[mask > 0].mean())
