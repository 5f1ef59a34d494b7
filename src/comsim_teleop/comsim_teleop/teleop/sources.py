"""Teleoperation sources: each turns an operator's input into a full joint target.

A source answers `command(now, q_measured)` with a target (arm joints then gripper) or None when
it has nothing to say (no input yet, or a scripted demonstration that has finished). The node
calls it at a steady rate and passes the result through `CommandShaper`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from comsim_core.robot.model import RobotModel


class LeaderArmSource:
    """A leader arm streams its joint states; the follower copies them (mapped, scaled)."""

    def __init__(self, robot: RobotModel, name_map: dict[str, str] | None = None,
                 gripper_scale: float = 1.0, gripper_offset: float = 0.0):
        self.robot = robot
        self.name_map = name_map or {n: n for n in robot.joint_names}
        self.gripper_scale = gripper_scale
        self.gripper_offset = gripper_offset
        self._target: np.ndarray | None = None

    def on_leader_state(self, names: list[str], positions) -> None:
        index = {n: i for i, n in enumerate(names)}
        missing = [leader for leader in self.name_map.values() if leader not in index]
        if missing:
            raise ValueError(f'leader arm state lacks joints {missing}; it has {list(names)}')
        q = np.array([positions[index[self.name_map[n]]] for n in self.robot.joint_names], float)
        q[-1] = q[-1] * self.gripper_scale + self.gripper_offset
        self._target = self.robot.clamp(q)

    def command(self, now: float, q_measured) -> np.ndarray | None:
        return None if self._target is None else self._target.copy()


class CartesianVelocitySource:
    """End-effector velocity (SpaceMouse, joystick, keyboard) integrated by damped least squares.

    The twist is expressed in the robot base frame: linear m/s then angular rad/s. Input older
    than `timeout` stops the motion, as a SpaceMouse driver that stops publishing should.
    """

    def __init__(self, robot: RobotModel, damping: float = 0.05, timeout: float = 0.3,
                 gripper_speed: float = 0.08):
        self.robot = robot
        self.damping = damping
        self.timeout = timeout
        self.gripper_speed = gripper_speed
        self._twist = np.zeros(6)
        self._gripper_dir = 0.0
        self._stamp = -np.inf
        self._target: np.ndarray | None = None
        self._last_now: float | None = None

    def on_twist(self, twist6, now: float, gripper_dir: float = 0.0) -> None:
        """gripper_dir: +1 opens, -1 closes, 0 keeps."""
        twist6 = np.asarray(twist6, dtype=float)
        if twist6.shape != (6,) or not np.all(np.isfinite(twist6)):
            raise ValueError('twist must be 6 finite numbers (vx vy vz wx wy wz)')
        self._twist = twist6
        self._gripper_dir = float(np.sign(gripper_dir))
        self._stamp = now

    def command(self, now: float, q_measured) -> np.ndarray | None:
        q_measured = np.asarray(q_measured, dtype=float)
        if self._target is None:
            self._target = q_measured.copy()
        dt = 0.0 if self._last_now is None else max(0.0, now - self._last_now)
        self._last_now = now
        if now - self._stamp > self.timeout:
            return self._target.copy()
        n = len(self.robot.arm_joint_names)
        dq = self.robot.dls_step(self._target[:n], self._twist, self.damping)
        q = self._target.copy()
        q[:n] += dq * dt
        q[-1] += self._gripper_dir * self.gripper_speed * dt
        self._target = self.robot.clamp(q)
        return self._target.copy()


def joy_to_twist(axes, buttons, mapping: 'JoyMapping') -> tuple[np.ndarray, float, bool]:
    """Map a sensor_msgs/Joy reading to (twist, gripper_dir, deadman_pressed)."""
    def axis(i):
        return float(axes[i]) if 0 <= i < len(axes) else 0.0

    def button(i):
        return bool(buttons[i]) if 0 <= i < len(buttons) else False

    raw = np.array([axis(i) for i in mapping.axes], dtype=float)
    raw[np.abs(raw) < mapping.deadzone] = 0.0
    twist = np.concatenate([raw[:3] * mapping.linear_scale, raw[3:] * mapping.angular_scale])
    gripper = (1.0 if button(mapping.open_button) else 0.0) - \
              (1.0 if button(mapping.close_button) else 0.0)
    deadman = mapping.deadman_button < 0 or button(mapping.deadman_button)
    return twist, gripper, deadman


@dataclass
class JoyMapping:
    """Axis indices for vx vy vz wx wy wz, scales, buttons (-1: no deadman button)."""
    axes: list[int] = field(default_factory=lambda: [1, 0, 4, 3, 7, 6])
    linear_scale: float = 0.15
    angular_scale: float = 0.6
    deadzone: float = 0.05
    open_button: int = 1
    close_button: int = 0
    deadman_button: int = 4


# Keyboard: one key one twist direction; held keys repeat in a terminal, so each press moves
# the target for `KeyboardTwist.hold` seconds.
KEY_BINDINGS: dict[str, tuple[int, float]] = {
    'w': (0, +1), 's': (0, -1), 'a': (1, +1), 'd': (1, -1), 'r': (2, +1), 'f': (2, -1),
    'j': (5, +1), 'l': (5, -1), 'i': (4, +1), 'k': (4, -1),
}
KEY_GRIPPER = {'o': +1.0, 'c': -1.0}


def key_to_twist(key: str, linear: float = 0.1, angular: float = 0.5):
    """Twist and gripper direction for one key press, or None for an unbound key."""
    if key in KEY_GRIPPER:
        return np.zeros(6), KEY_GRIPPER[key]
    if key not in KEY_BINDINGS:
        return None
    axis, sign = KEY_BINDINGS[key]
    twist = np.zeros(6)
    twist[axis] = sign * (linear if axis < 3 else angular)
    return twist, 0.0
