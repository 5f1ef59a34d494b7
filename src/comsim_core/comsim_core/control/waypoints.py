"""Cartesian keyframes -> smooth, velocity-limited joint trajectory (via RobotModel.ik).

Each segment between keyframes is densified in Cartesian space (optionally bent through a
via-point so paths look hand-made), solved with warm-started IK, then timed with a
minimum-jerk profile whose peak joint speed stays under a fraction of max_velocity.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from comsim_core.robot.model import RobotModel, tool_down_rotation

_MINJERK_PEAK = 1.875   # peak / mean speed of a minimum-jerk profile


@dataclass
class Keyframe:
    """TCP target pointing down: position (base frame), yaw about Z, gripper opening."""

    pos: np.ndarray
    yaw: float
    grip: float
    speed: float = 0.25          # Cartesian mean speed limit for the segment into it (m/s)
    bend: np.ndarray | None = None   # offset of the segment midpoint (curved path)
    pause: float = 0.0           # hold after reaching it (s)
    min_duration: float = 0.0


def _minjerk(s: np.ndarray | float) -> np.ndarray | float:
    s = np.clip(s, 0.0, 1.0)
    return s ** 3 * (10 - 15 * s + 6 * s ** 2)


class WaypointTrajectory:
    """Piecewise joint trajectory; sample(t) returns the full joint target (arm + gripper)."""

    def __init__(self, robot: RobotModel, q_start: np.ndarray, keyframes: list[Keyframe],
                 velocity_fraction: float = 0.5, step: float = 0.01):
        self.robot = robot
        q = robot.clamp(np.asarray(q_start, dtype=float))
        pos, _ = robot.fk(q)
        prev_pos, prev_yaw, prev_grip = pos, self._yaw_of(q), float(q[-1])
        self._segments: list[tuple[float, float, np.ndarray]] = []   # (t0, duration, knots)
        t = 0.0
        vmax = robot.max_velocity * velocity_fraction
        vmax[-1] = robot.max_velocity[-1]     # the gripper may close at full speed
        for kf in keyframes:
            knots = self._solve_segment(q, prev_pos, prev_yaw, prev_grip, kf, step)
            tv = np.abs(np.diff(knots, axis=0)).sum(axis=0)
            dist = float(np.linalg.norm(kf.pos - prev_pos))
            duration = max(kf.min_duration, 0.05, _MINJERK_PEAK * dist / kf.speed,
                           float(np.max(_MINJERK_PEAK * tv / vmax)))
            self._segments.append((t, duration, knots))
            t += duration
            if kf.pause > 0:
                self._segments.append((t, kf.pause, knots[-1:].copy()))
                t += kf.pause
            q = knots[-1]
            prev_pos, prev_yaw, prev_grip = kf.pos, kf.yaw, kf.grip
        self.duration = t
        self.final = q.copy()

    def _yaw_of(self, q: np.ndarray) -> float:
        _, rot = self.robot.fk(q)
        x = rot[:, 0]
        return float(np.arctan2(-x[1], -x[0]))

    def _solve_segment(self, q: np.ndarray, p0: np.ndarray, yaw0: float, g0: float, kf: Keyframe,
                       step: float) -> np.ndarray:
        dist = float(np.linalg.norm(kf.pos - p0))
        n = max(2, int(np.ceil(max(dist, abs(kf.yaw - yaw0) * 0.1) / step)) + 1)
        knots = [q.copy()]
        q_cur = q.copy()
        for s in np.linspace(0.0, 1.0, n)[1:]:
            p = p0 + s * (kf.pos - p0)
            if kf.bend is not None:
                p = p + np.sin(np.pi * s) * kf.bend
            yaw = yaw0 + s * (kf.yaw - yaw0)
            q_cur = self.robot.ik(p, tool_down_rotation(yaw), q0=q_cur)
            q_cur[-1] = g0 + s * (kf.grip - g0)
            knots.append(q_cur.copy())
        return np.array(knots)

    def sample(self, t: float) -> np.ndarray:
        if t <= 0:
            return self._segments[0][2][0].copy()
        for t0, duration, knots in self._segments:
            if t < t0 + duration:
                u = float(_minjerk((t - t0) / duration)) * (len(knots) - 1)
                i = min(int(u), len(knots) - 2) if len(knots) > 1 else 0
                if len(knots) == 1:
                    return knots[0].copy()
                a = u - i
                return (1 - a) * knots[i] + a * knots[i + 1]
        return self.final.copy()
