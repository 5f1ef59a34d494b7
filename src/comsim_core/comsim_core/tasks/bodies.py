"""What a task needs to know about an object's shape: the lab's ObjectConfig and the twin's
TwinObject both fit `Body` (MuJoCo half-sizes: box hx hy hz, cylinder r half_h, sphere r)."""
from __future__ import annotations

from typing import Protocol, Sequence

import numpy as np


class Body(Protocol):
    shape: str
    size: Sequence[float]


def half_height(body: Body) -> float:
    """Height of the centre above the table when the object stands on it."""
    if body.shape == 'sphere':
        return float(body.size[0])
    return float(body.size[2] if body.shape == 'box' else body.size[1])


def footprint(body: Body) -> float:
    """Radius of the object's footprint on the table (for spacing)."""
    if body.shape == 'box':
        return float(np.hypot(body.size[0], body.size[1]))
    return float(body.size[0])
