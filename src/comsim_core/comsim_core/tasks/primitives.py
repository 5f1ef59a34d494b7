"""Action primitives: small, robot-model based motion pieces that expand into Cartesian keyframes.

A task program (``programs.py``) is a list of primitive calls; each primitive reads the task
state (object poses, sizes) and the planner's running state (where the tool is, what it holds)
and appends ``Keyframe``s (TCP pose pointing down, gripper opening, timing). Human-like variation
comes from the planner's seeded rng: overall speed, curved transit via-points, pauses, grasp
offsets. No simulator: only ``RobotModel`` forward kinematics (``WaypointTrajectory`` does IK).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from comsim_core.control.waypoints import Keyframe
from comsim_core.robot.model import RobotModel

TIP_BELOW_TCP = 0.015   # default arm: fingertip ends 1.5 cm beyond the tcp site
PALM_ABOVE_TCP = 0.045  # palm underside above the tcp
OPEN = 0.04             # full finger opening (m)
PUSHER = 0.013          # half thickness of the closed fingers seen from the push direction


class PrimitiveError(ValueError):
    """A primitive call that cannot be planned (unknown object, missing argument, bad value)."""


def yaw_of_quat(quat: list[float]) -> float:
    w, x, y, z = quat
    return float(np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z)))


def wrap(a: float) -> float:
    return float((a + np.pi) % (2 * np.pi) - np.pi)


def grasp_yaw(obj_yaw: float, symmetry: float, azimuth: float) -> float:
    """Gripper yaw equivalent to obj_yaw under the object's symmetry, closest to the azimuth."""
    k = np.round((azimuth - obj_yaw) / symmetry)
    return float(obj_yaw + k * symmetry)


@dataclass
class Planner:
    """Running state while a program expands: tool pose, held object, variation rng."""

    robot: RobotModel
    state: dict
    rng: np.random.Generator
    speed: float = 1.0
    pos: np.ndarray = field(default_factory=lambda: np.zeros(3))
    yaw: float = 0.0
    grip: float = OPEN
    held: str | None = None
    grasp_pos: np.ndarray | None = None     # where the held object was picked (tcp)
    frames: list[Keyframe] = field(default_factory=list)

    @classmethod
    def start(cls, robot: RobotModel, state: dict, rng: np.random.Generator,
              speed: float) -> 'Planner':
        pos, _ = robot.fk(robot.home)
        return cls(robot, state, rng, speed, pos=np.asarray(pos, float), grip=OPEN)

    # -- variation ---------------------------------------------------------------------------
    def v(self, base: float) -> float:
        return base * self.speed

    def pause(self, lo: float = 0.05, hi: float = 0.25) -> float:
        return float(self.rng.uniform(lo, hi)) if self.rng.random() < 0.6 else 0.0

    def bend(self, a: np.ndarray, b: np.ndarray, amp: float = 0.03) -> np.ndarray:
        """Random midpoint offset, perpendicular-ish to the move and slightly upward."""
        d = np.asarray(b, float) - np.asarray(a, float)
        side = np.array([-d[1], d[0], 0.0])
        n = np.linalg.norm(side)
        side = side / n if n > 1e-6 else np.zeros(3)
        return side * self.rng.uniform(-amp, amp) + np.array([0, 0, self.rng.uniform(0, amp)])

    def jitter(self, scale: float = 0.003) -> np.ndarray:
        return np.append(self.rng.uniform(-scale, scale, 2), 0.0)

    # -- keyframes ---------------------------------------------------------------------------
    def add(self, pos: np.ndarray, yaw: float | None = None, grip: float | None = None,
            speed: float = 0.25, bend: np.ndarray | None = None, pause: float = 0.0,
            min_duration: float = 0.0) -> None:
        yaw = self.yaw if yaw is None else float(yaw)
        grip = self.grip if grip is None else float(grip)
        pos = np.asarray(pos, float).copy()
        self.frames.append(Keyframe(pos, yaw, grip, speed, bend, pause, min_duration))
        self.pos, self.yaw, self.grip = pos, yaw, grip

    # -- task state --------------------------------------------------------------------------
    def obj(self, name: str) -> dict:
        objects = self.state.get('objects') or {}
        if name not in objects:
            raise PrimitiveError(f'unknown object {name!r}; task state has {sorted(objects)}')
        return objects[name]

    @property
    def table_z(self) -> float:
        return float(self.state.get('table_z', 0.0))


def half_height(o: dict) -> float:
    return float(o['size'][-1] if o['shape'] == 'box' else o['size'][1])


def half_width(o: dict) -> float:
    return float(o['size'][1] if o['shape'] == 'box' else o['size'][0])


def neck_height(o: dict) -> float:
    return 2 * float(o['neck'][1]) if o.get('neck') else 0.0


def _vec(value: Any, n: int, what: str) -> np.ndarray:
    arr = np.asarray(value, float).reshape(-1)
    if arr.size != n:
        raise PrimitiveError(f'{what} needs {n} numbers, got {value!r}')
    return arr


# ---------------------------------------------------------------------------- primitives
def move_to(p: Planner, pos: list[float], yaw: float | None = None,
            speed: float = 0.4) -> None:
    """Transit to a TCP position (base frame) along a curved, hand-made looking path."""
    target = _vec(pos, 3, 'move_to.pos')
    p.add(target, yaw, speed=p.v(speed), bend=p.bend(p.pos, target), pause=p.pause())


def grasp(p: Planner, object: str, approach: float | None = None) -> None:
    """Approach above the object, descend with the gripper open, close on it."""
    o = p.obj(object)
    c = np.asarray(o['pos'], float)
    h = half_height(o)
    neck = neck_height(o)
    az = float(np.arctan2(c[1], c[0]))
    if o['shape'] == 'box':
        yaw = grasp_yaw(yaw_of_quat(o['quat']), np.pi / 2, az)
    else:                                   # round: any yaw works, keep the wrist relaxed
        yaw = az + (float(p.rng.uniform(-0.2, 0.2)) if neck else 0.0)
    open_w = min(OPEN, half_width(o) + 0.015)
    if neck:                                # tall bottle: grip the body just under the shoulder
        top_body = c[2] + h
        z = max(top_body - 0.008, top_body + neck - PALM_ABOVE_TCP + 0.006)
        z = min(z, top_body - 0.004)
        g = c + p.jitter(0.002)
        clearance = neck + 0.07 + p.rng.uniform(0, 0.02)
    else:
        z = max(c[2], TIP_BELOW_TCP + 0.004) + p.rng.uniform(-0.002, 0.003)
        g = c + p.jitter()
        clearance = 0.10 + p.rng.uniform(0, 0.03)
    if approach is not None:
        clearance = float(approach)
    g[2] = z
    above = g + [0, 0, clearance]
    p.add(above, yaw, open_w, p.v(0.4), p.bend(p.pos, above), p.pause())
    p.add(g, yaw, open_w, p.v(0.2), pause=0.1)
    p.add(g, yaw, 0.0, min_duration=0.35, pause=0.2)
    p.held, p.grasp_pos = object, g.copy()


def lift(p: Planner, height: float | None = None, to_z: float | None = None) -> None:
    """Straight up by `height` (m) or to the absolute TCP height `to_z`."""
    if p.held is None:
        raise PrimitiveError('lift: nothing held (call grasp first)')
    z = float(to_z) if to_z is not None else p.pos[2] + (
        float(height) if height is not None else p.rng.uniform(0.09, 0.11))
    p.add(np.array([p.pos[0], p.pos[1], z]), speed=p.v(0.25), pause=p.pause(0.05, 0.15))


def place(p: Planner, on: str | None = None, at: list[float] | None = None,
          carry_height: float = 0.07) -> None:
    """Carry the held object over a target (another object, a table xy, or where it was picked),
    lower it, open, retreat."""
    if p.held is None:
        raise PrimitiveError('place: nothing held (call grasp first)')
    held = p.obj(p.held)
    h_held = half_height(held)
    offset = p.grasp_pos[2] - (np.asarray(held['pos'], float)[2]) if p.grasp_pos is not None \
        else 0.0
    if on is not None:
        base = p.obj(on)
        b = np.asarray(base['pos'], float)
        spot = b + p.jitter(0.002)
        spot[2] = b[2] + half_height(base) + h_held + 0.004 + min(offset, 0.0)
        carry_z = b[2] + half_height(base) + 2 * h_held + carry_height
    elif at is not None:
        xy = _vec(at, 2, 'place.at')
        spot = np.array([xy[0], xy[1], p.table_z + h_held + 0.004 + offset])
        carry_z = p.table_z + 2 * h_held + carry_height + max(offset, 0.0)
    elif p.grasp_pos is not None:
        spot = p.grasp_pos + [0, 0, 0.004]
        carry_z = spot[2] + 0.05
    else:
        raise PrimitiveError('place: give `on` (object) or `at` ([x, y])')
    carry_z = max(carry_z, p.pos[2])
    if np.linalg.norm(p.pos[:2] - spot[:2]) > 0.01:
        if p.pos[2] < carry_z - 1e-3:
            p.add(np.array([p.pos[0], p.pos[1], carry_z]), speed=p.v(0.25))
        over = np.array([spot[0], spot[1], carry_z])
        p.add(over, speed=p.v(0.35), bend=p.bend(p.pos, over), pause=p.pause())
    p.add(spot, speed=p.v(0.12), pause=0.15)
    release(p)


def release(p: Planner, retreat: float = 0.08) -> None:
    """Open the gripper where it is, then move straight up."""
    width = OPEN if p.held is None else min(OPEN, half_width(p.obj(p.held)) + 0.015)
    p.add(p.pos, grip=width, min_duration=0.3, pause=0.1)
    p.held = None
    p.add(p.pos + [0, 0, float(retreat)], speed=p.v(0.25))


def push(p: Planner, object: str, to: list[float] | None = None) -> None:
    """Slide a flat object along the table with closed fingers until its centre reaches `to`
    (default: the task's target zone centre)."""
    o = p.obj(object)
    if to is None:
        zone = (p.state.get('target') or {}).get('zone_center')
        if zone is None:
            raise PrimitiveError('push: no `to` and the task state has no target.zone_center')
        to = zone
    pos = np.asarray(o['pos'], float)
    goal = np.append(_vec(to, 2, 'push.to'), pos[2])
    d = goal - pos
    d[2] = 0.0
    d = d / max(float(np.linalg.norm(d)), 1e-6)
    cyaw = yaw_of_quat(o['quat'])
    ex = np.array([np.cos(cyaw), np.sin(cyaw), 0.0])
    ey = np.array([-np.sin(cyaw), np.cos(cyaw), 0.0])
    extent = abs(d @ ex) * o['size'][0] + abs(d @ ey) * o['size'][1]
    yaw = wrap(float(np.arctan2(d[1], d[0])))   # tcp x along the push: narrow side leads
    if abs(wrap(yaw - float(np.arctan2(pos[1], pos[0])))) > np.pi / 2:
        yaw = wrap(yaw + np.pi)
    z = p.table_z + TIP_BELOW_TCP + 0.002
    lateral = np.array([-d[1], d[0], 0.0]) * p.rng.uniform(-0.006, 0.006)
    start = pos - d * (extent + PUSHER + 0.02) + lateral
    end = goal - d * (extent + PUSHER) + d * p.rng.uniform(0.0, 0.008) + lateral
    start[2] = end[2] = z
    above = start + [0, 0, 0.08 + p.rng.uniform(0, 0.03)]
    p.add(above, yaw, 0.0, p.v(0.4), p.bend(p.pos, above), p.pause())
    p.add(start, speed=p.v(0.2), pause=0.1)
    p.add(end, speed=p.v(0.12), pause=p.pause(0.1, 0.3))
    p.add(end + [0, 0, 0.08] - d * 0.02, speed=p.v(0.25))


def shake(p: Planner, cycles: int | None = None, amplitude: float | None = None,
          half_period: float | None = None) -> None:
    """Shake side to side (perpendicular to the reach direction) around the current pose."""
    centre = p.pos.copy()
    az = float(np.arctan2(centre[1], centre[0]))
    side = np.array([-np.sin(az), np.cos(az), 0.0])
    amp = float(amplitude) if amplitude is not None else p.rng.uniform(0.035, 0.05)
    hp = float(half_period) if half_period is not None else \
        p.rng.uniform(0.24, 0.29) / p.speed
    n = int(cycles) if cycles is not None else int(p.rng.integers(4, 5))
    if n < 1 or amp <= 0 or hp <= 0:
        raise PrimitiveError(f'shake: cycles, amplitude, half_period must be > 0 '
                             f'(got {n}, {amp}, {hp})')
    for i in range(2 * n):
        sign = 1.0 if i % 2 == 0 else -1.0
        p.add(centre + sign * amp * side, speed=5.0, min_duration=hp * (0.5 if i == 0 else 1.0))
    p.add(centre, speed=5.0, min_duration=hp * 0.5, pause=0.1)


def stack(p: Planner, object: str, on: str) -> None:
    """grasp + lift clear of the base + place on it."""
    grasp(p, object)
    o, base = p.obj(object), p.obj(on)
    carry_z = float(base['pos'][2]) + half_height(base) + 2 * half_height(o) + 0.07
    lift(p, to_z=carry_z)
    place(p, on=on)


def wait(p: Planner, seconds: float) -> None:
    """Hold still."""
    if seconds <= 0:
        raise PrimitiveError(f'wait: seconds must be > 0, got {seconds}')
    p.add(p.pos, min_duration=float(seconds))


def home(p: Planner) -> None:
    """Return to the robot's home TCP pose."""
    pos, _ = p.robot.fk(p.robot.home)
    move_to(p, list(pos))


PRIMITIVES: dict[str, Callable[..., None]] = {
    f.__name__: f for f in (move_to, grasp, lift, place, release, push, shake, stack, wait, home)}

API_DESCRIPTION = """Primitives (units m, rad, s; base frame, table top z = table_z):
- move_to(pos=[x,y,z], yaw=null, speed=0.4): transit of the tool centre point.
- grasp(object, approach=null): approach above, descend open, close on the object.
- lift(height=null | to_z=null): straight up while holding.
- place(on=null | at=[x,y] | neither = where it was picked): carry, lower, open, retreat.
- release(retreat=0.08): open and move up.
- push(object, to=[x,y] | null = task target zone centre): slide along the table.
- shake(cycles=null, amplitude=null, half_period=null): side-to-side while holding.
- stack(object, on): grasp + lift + place on another object.
- wait(seconds), home().
A program is JSON: {"task": "...", "steps": [{"primitive": "grasp", "object": "bottle"}, ...]}."""
