"""The gripper's target through a kinematic replay: the arm is placed, the gripper driven
(a finger placed where the sim's stopped touches the object without squeezing it)."""
from __future__ import annotations

import numpy as np

from comsim_core.episodes.tracks import JointTrack


class GripTrack:
    """The gripper target in force at each time (last command; the measured opening before
    the first): the gripper is driven, not placed, so a grasp holds (``step_kinematic``)."""

    def __init__(self, track: JointTrack, t_ns: np.ndarray, target: np.ndarray) -> None:
        self.track = track
        self.t = (np.asarray(t_ns, np.int64) - track.t0_ns).astype(np.float64)
        self.target = np.asarray(target, float)

    def at(self, t: np.ndarray) -> np.ndarray:
        """Targets at ``t`` (ns since the first joint sample)."""
        out = self.track.at(t)[0][:, -1]
        idx = np.searchsorted(self.t, t + 1.0, side='right') - 1
        ok = idx >= 0
        out[ok] = self.target[idx[ok]]
        return out
