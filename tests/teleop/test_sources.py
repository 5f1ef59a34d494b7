"""Teleop sources without ROS: leader mapping, end-effector velocity through DLS IK, joystick and
keyboard mappings."""
import numpy as np
import pytest

from comsim_core.robot.model import RobotModel
from comsim_teleop.teleop.sources import (
    CartesianVelocitySource,
    JoyMapping,
    LeaderArmSource,
    joy_to_twist,
    key_to_twist,
)


@pytest.fixture(scope='module')
def robot():
    return RobotModel.load()


def test_leader_maps_names_and_clamps(robot):
    src = LeaderArmSource(robot, gripper_scale=0.5)
    assert src.command(0.0, robot.home) is None  # nothing received yet
    names = list(reversed(robot.joint_names))
    q = np.concatenate([[0.06], robot.home[:6][::-1] + 10.0])  # gripper first, arm far off
    src.on_leader_state(names, q)
    out = src.command(0.0, robot.home)
    np.testing.assert_allclose(out[:6], robot.upper[:6])
    assert out[6] == pytest.approx(min(0.03, robot.upper[6]))
    with pytest.raises(ValueError, match='lacks joints'):
        src.on_leader_state(['joint1'], [0.0])


def test_twist_moves_the_tool_in_the_commanded_direction(robot):
    src = CartesianVelocitySource(robot, timeout=10.0)
    q = robot.home.copy()
    p0, r0 = robot.fk(q)
    src.on_twist([0.05, 0.0, -0.02, 0, 0, 0], now=0.0, gripper_dir=-1)
    for k in range(1, 51):  # 1 s at 50 Hz
        q = src.command(k * 0.02, q)
    p1, r1 = robot.fk(q)
    np.testing.assert_allclose(p1 - p0, [0.05, 0.0, -0.02], atol=5e-3)
    assert np.degrees(np.arccos(np.clip((np.trace(r0.T @ r1) - 1) / 2, -1, 1))) < 2.0
    assert q[6] < robot.home[6]  # gripper closing


def test_stale_twist_stops_motion(robot):
    src = CartesianVelocitySource(robot, timeout=0.1)
    q = robot.home.copy()
    src.on_twist([0.1, 0, 0, 0, 0, 0], now=0.0)
    q1 = src.command(0.05, q)
    q2 = src.command(0.5, q1)  # input is 0.5 s old: hold
    q3 = src.command(0.6, q2)
    np.testing.assert_allclose(q2, q3)


def test_joy_mapping_deadzone_and_deadman():
    m = JoyMapping()
    axes = [0.0] * 8
    axes[1] = 1.0    # vx
    axes[0] = 0.02   # inside the deadzone
    buttons = [0] * 6
    twist, grip, deadman = joy_to_twist(axes, buttons, m)
    assert twist[0] == pytest.approx(m.linear_scale) and twist[1] == 0.0
    assert not deadman and grip == 0.0
    buttons[m.deadman_button] = 1
    buttons[m.close_button] = 1
    _, grip, deadman = joy_to_twist(axes, buttons, m)
    assert deadman and grip == -1.0


def test_keys():
    twist, grip = key_to_twist('w')
    assert twist[0] > 0 and grip == 0.0
    assert key_to_twist('o')[1] == 1.0
    assert key_to_twist('?') is None
