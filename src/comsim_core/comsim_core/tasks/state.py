"""Object state as success checks see it: the same type from the lab's MjData and from the
twin backend's object_states(), so one check serves both."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

STILL_LIN = 0.02   # m/s: "nearly still"
STILL_ANG = 0.3    # rad/s


@dataclass(frozen=True)
class ObjectState:
    pos: np.ndarray       # (3,) centre, base frame
    quat: np.ndarray      # (4,) w x y z
    lin_vel: np.ndarray   # (3,) world frame
    ang_vel: np.ndarray   # (3,)

    @classmethod
    def of(cls, pos: Sequence[float], quat: Sequence[float] = (1.0, 0.0, 0.0, 0.0),
           lin_vel: Sequence[float] = (0.0, 0.0, 0.0),
           ang_vel: Sequence[float] = (0.0, 0.0, 0.0)) -> 'ObjectState':
        return cls(np.asarray(pos, float), np.asarray(quat, float), np.asarray(lin_vel, float),
                   np.asarray(ang_vel, float))

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> 'ObjectState':
        """From a twin backend's {'pos', 'quat', 'lin_vel', 'ang_vel'} entry."""
        return cls.of(d['pos'], d['quat'], d['lin_vel'], d['ang_vel'])


States = Mapping[str, ObjectState]


def is_still(state: ObjectState) -> bool:
    return bool(np.linalg.norm(state.lin_vel) < STILL_LIN
                and np.linalg.norm(state.ang_vel) < STILL_ANG)
