"""ScriptedExpert: solves the bench tasks from ground-truth task state, like a varied human demo.

Plans Cartesian keyframes per task (grasp/place/push/shake primitives), converts them to a
smooth joint trajectory with RobotModel.ik, and adds seeded human-like variation: overall
speed, curved transit paths through random via-points, short pauses and small grasp offsets.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from comsim_teleop.robot.model import RobotModel
from comsim_teleop.teleop.waypoint_trajectory import Keyframe, WaypointTrajectory

TIP_BELOW_TCP = 0.015   # default arm: fingertip ends 1.5 cm beyond the tcp site
PALM_ABOVE_TCP = 0.045  # palm underside above the tcp
OPEN = 0.04


def _yaw_of_quat(quat: list[float]) -> float:
    w, x, y, z = quat
    return float(np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z)))


def _wrap(a: float) -> float:
    return float((a + np.pi) % (2 * np.pi) - np.pi)


def grasp_yaw(obj_yaw: float, symmetry: float, azimuth: float) -> float:
    """Gripper yaw equivalent to obj_yaw under the object's symmetry, closest to the azimuth."""
    k = np.round((azimuth - obj_yaw) / symmetry)
    return float(obj_yaw + k * symmetry)


class ScriptedExpert:
    """command(t, q_measured) -> full joint target at time t, or None once finished."""

    def __init__(self, robot: RobotModel, task_state: dict, seed: int):
        self.robot = robot
        self.state = task_state
        self.rng = np.random.default_rng(seed)
        self.speed = float(self.rng.uniform(0.8, 1.2))
        planners: dict[str, Callable[[], list[Keyframe]]] = {
            'stack_blocks': self._plan_stack, 'move_card': self._plan_card,
            'shake_bottle': self._plan_shake}
        task = task_state.get('task')
        if task not in planners:
            raise ValueError(f'ScriptedExpert: no plan for task {task!r}; known: {sorted(planners)}')
        self._planner = planners[task]
        self._traj: WaypointTrajectory | None = None

    @property
    def duration(self) -> float | None:
        return None if self._traj is None else self._traj.duration

    def command(self, t: float, q_measured: np.ndarray) -> np.ndarray | None:
        if self._traj is None:
            self._traj = WaypointTrajectory(self.robot, np.asarray(q_measured, float), self._planner())
        if t > self._traj.duration:
            return None
        return self._traj.sample(t)

    # ------------------------------------------------------------------ variation helpers
    def _v(self, base: float) -> float:
        return base * self.speed

    def _pause(self, lo: float = 0.05, hi: float = 0.25) -> float:
        return float(self.rng.uniform(lo, hi)) if self.rng.random() < 0.6 else 0.0

    def _bend(self, a: np.ndarray, b: np.ndarray, amp: float = 0.03) -> np.ndarray:
        """Random midpoint offset, perpendicular-ish to the move and slightly upward."""
        d = np.asarray(b, float) - np.asarray(a, float)
        side = np.array([-d[1], d[0], 0.0])
        n = np.linalg.norm(side)
        side = side / n if n > 1e-6 else np.zeros(3)
        return side * self.rng.uniform(-amp, amp) + np.array([0, 0, self.rng.uniform(0, amp)])

    def _jitter(self, scale: float = 0.003) -> np.ndarray:
        return np.append(self.rng.uniform(-scale, scale, 2), 0.0)

    def _home_pos(self) -> np.ndarray:
        return self.robot.fk(self.robot.home)[0]

    # ------------------------------------------------------------------ task plans
    def _plan_stack(self) -> list[Keyframe]:
        objs = self.state['objects']
        top, bot = objs['block_top'], objs['block_bottom']
        p_top, p_bot = np.array(top['pos']), np.array(bot['pos'])
        h_top = top['size'][-1]
        h_bot = bot['size'][-1]
        sym_top = np.pi / 2 if top['shape'] == 'box' else np.pi
        yaw = grasp_yaw(_yaw_of_quat(top['quat']), sym_top, np.arctan2(p_top[1], p_top[0]))
        if top['shape'] != 'box':
            yaw = float(np.arctan2(p_top[1], p_top[0]))
        width = top['size'][1] if top['shape'] == 'box' else top['size'][0]
        open_w = min(OPEN, width + 0.015)
        z_grasp = max(p_top[2], TIP_BELOW_TCP + 0.004) + self.rng.uniform(-0.002, 0.003)
        grasp = p_top + self._jitter()
        grasp[2] = z_grasp
        above = grasp + [0, 0, 0.10 + self.rng.uniform(0, 0.03)]
        carry_z = p_bot[2] + h_bot + 2 * h_top + 0.07
        place = p_bot + self._jitter(0.002)
        place[2] = p_bot[2] + h_bot + h_top + 0.004
        yaw_place = yaw
        home = self._home_pos()
        lift = np.array([grasp[0], grasp[1], carry_z])
        over = np.array([place[0], place[1], carry_z])
        return [
            Keyframe(above, yaw, open_w, self._v(0.4), self._bend(home, above), self._pause()),
            Keyframe(grasp, yaw, open_w, self._v(0.2), pause=0.1),
            Keyframe(grasp, yaw, 0.0, min_duration=0.35, pause=0.2),
            Keyframe(lift, yaw, 0.0, self._v(0.25)),
            Keyframe(over, yaw_place, 0.0, self._v(0.35), self._bend(lift, over), self._pause()),
            Keyframe(place, yaw_place, 0.0, self._v(0.12), pause=0.15),
            Keyframe(place, yaw_place, open_w, min_duration=0.3, pause=0.1),
            Keyframe(place + [0, 0, 0.08], yaw_place, open_w, self._v(0.25)),
        ]

    def _plan_card(self) -> list[Keyframe]:
        card = self.state['objects']['card']
        p = np.array(card['pos'])
        c = np.array(self.state['target']['zone_center'] + [p[2]])
        d = c - p
        d[2] = 0.0
        dist = float(np.linalg.norm(d))
        d = d / max(dist, 1e-6)
        cyaw = _yaw_of_quat(card['quat'])
        ex = np.array([np.cos(cyaw), np.sin(cyaw), 0.0])
        ey = np.array([-np.sin(cyaw), np.cos(cyaw), 0.0])
        hx, hy = card['size'][0], card['size'][1]
        extent = abs(d @ ex) * hx + abs(d @ ey) * hy
        pusher = 0.013
        yaw = _wrap(float(np.arctan2(d[1], d[0])))   # tcp x along the push: narrow side leads
        az = float(np.arctan2(p[1], p[0]))
        if abs(_wrap(yaw - az)) > np.pi / 2:
            yaw = _wrap(yaw + np.pi)
        z_push = TIP_BELOW_TCP + 0.002
        lateral = np.array([-d[1], d[0], 0.0]) * self.rng.uniform(-0.006, 0.006)
        start = p - d * (extent + pusher + 0.02) + lateral
        start[2] = z_push
        end = c - d * (extent + pusher) + d * self.rng.uniform(0.0, 0.008) + lateral
        end[2] = z_push
        above = start + [0, 0, 0.08 + self.rng.uniform(0, 0.03)]
        home = self._home_pos()
        return [
            Keyframe(above, yaw, 0.0, self._v(0.4), self._bend(home, above), self._pause()),
            Keyframe(start, yaw, 0.0, self._v(0.2), pause=0.1),
            Keyframe(end, yaw, 0.0, self._v(0.12), pause=self._pause(0.1, 0.3)),
            Keyframe(end + [0, 0, 0.08] - d * 0.02, yaw, 0.0, self._v(0.25)),
        ]

    def _plan_shake(self) -> list[Keyframe]:
        bottle = self.state['objects']['bottle']
        p = np.array(bottle['pos'])
        h = bottle['size'][1]
        neck_h = 2 * bottle['neck'][1] if 'neck' in bottle else 0.0
        bottom_z = p[2] - h
        top_body = bottom_z + 2 * h
        z_grasp = max(top_body - 0.008, top_body + neck_h - PALM_ABOVE_TCP + 0.006)
        z_grasp = min(z_grasp, top_body - 0.004)
        az = float(np.arctan2(p[1], p[0]))
        yaw = az + self.rng.uniform(-0.2, 0.2)
        grasp = p + self._jitter(0.002)
        grasp[2] = z_grasp
        above = grasp + [0, 0, neck_h + 0.07 + self.rng.uniform(0, 0.02)]
        lift_h = self.rng.uniform(0.09, 0.11)
        lifted = grasp + [0, 0, lift_h]
        side = np.array([-np.sin(az), np.cos(az), 0.0])
        amp = self.rng.uniform(0.035, 0.05)
        half_period = self.rng.uniform(0.24, 0.29) / self.speed
        home = self._home_pos()
        frames = [
            Keyframe(above, yaw, OPEN, self._v(0.4), self._bend(home, above), self._pause()),
            Keyframe(grasp, yaw, OPEN, self._v(0.25), pause=0.05),
            Keyframe(grasp, yaw, 0.0, min_duration=0.35, pause=0.15),
            Keyframe(lifted, yaw, 0.0, self._v(0.25), pause=self._pause(0.05, 0.15)),
        ]
        n_half = 2 * int(self.rng.integers(4, 5))
        for i in range(n_half):
            sign = 1.0 if i % 2 == 0 else -1.0
            target = lifted + sign * amp * side
            frames.append(Keyframe(target, yaw, 0.0, speed=5.0, min_duration=half_period * (0.5 if i == 0 else 1.0)))
        frames += [
            Keyframe(lifted, yaw, 0.0, speed=5.0, min_duration=half_period * 0.5, pause=0.1),
            Keyframe(grasp + [0, 0, 0.004], yaw, 0.0, self._v(0.25), pause=0.15),
            Keyframe(grasp + [0, 0, 0.004], yaw, OPEN, min_duration=0.3, pause=0.1),
            Keyframe(grasp + [0, 0, neck_h + 0.06], yaw, OPEN, self._v(0.3)),
        ]
        return frames
