"""The scripted expert's look-ahead command: a window of its program, shaped, that a
joint_trajectory_controller executes as the program even when most ticks are missed."""
import numpy as np
import pytest

from comsim_core.control.limits import CommandShaper
from comsim_core.control.trajectory import TrajectoryFollower, TrajectoryPoint
from comsim_core.robot.model import RobotModel
from comsim_core.tasks.expert import ScriptedExpert

BOTTLE = {'task': 'shake_bottle', 'table_z': 0.0,
          'objects': {'bottle': {'pos': [0.4, 0.05, 0.05], 'quat': [1, 0, 0, 0],
                                 'shape': 'cylinder', 'size': [0.03, 0.05],
                                 'neck': [0.012, 0.015], 'color': [0, 1, 0]}}}
DT = 0.02


@pytest.fixture(scope='module')
def robot():
    return RobotModel.load()


def test_window_is_the_program_ahead_and_ends_with_it(robot):
    expert = ScriptedExpert(robot, BOTTLE, seed=3)
    w = expert.window(1.0, robot.home, horizon=0.5, dt=DT)
    assert w.shape == (26, len(robot.joint_names))
    for i in (0, 7, 25):
        np.testing.assert_allclose(w[i], expert.command(1.0 + i * DT, robot.home))
    end = expert.duration
    tail = expert.window(end - 0.05, robot.home, horizon=0.5, dt=DT)
    assert len(tail) == 4                      # 0, 0.02, 0.04 and the end (clipped)
    np.testing.assert_allclose(tail[-1], expert.command(end, robot.home))
    last = expert.window(end, robot.home, horizon=0.5, dt=DT)
    assert len(last) == 2                      # a goal that ends after its stamp, as a JTC needs
    np.testing.assert_allclose(last, [expert.command(end, robot.home)] * 2)
    assert expert.window(end + DT, robot.home, 0.5, DT) is None


def test_shaper_path_limits_every_point_and_remembers_point_0(robot):
    shaper = CommandShaper(robot.lower, robot.upper, robot.max_velocity)
    shaper.reset(robot.home)
    jump = np.tile(robot.home, (3, 1))
    jump[1:, 0] += 1.0                          # a step of 1 rad between point 0 and 1
    jump[0, 1] += 1.0                           # and one from the previous command
    out = shaper.path(jump, DT, elapsed=3 * DT)
    assert out[0, 1] == pytest.approx(robot.home[1] + robot.max_velocity[1] * 3 * DT)
    assert np.diff(out[:, 0]) == pytest.approx([robot.max_velocity[0] * DT] * 2)
    nxt = shaper(robot.home, DT)                # the next command moves on from point 0
    assert nxt[1] == pytest.approx(out[0, 1] - robot.max_velocity[1] * DT)


def test_controller_executes_the_program_through_missed_ticks(robot):
    """Feed the windows of the ticks that get through (2 of 3 missed, in bursts) to the
    controller the bench lab uses: its setpoint is the program at every instant."""
    expert = ScriptedExpert(robot, BOTTLE, seed=1)
    expert.command(0.0, robot.home)             # plans the program
    shaper = CommandShaper(robot.lower, robot.upper, robot.max_velocity)
    shaper.reset(robot.home)
    follower = TrajectoryFollower(robot.joint_names)
    follower.set_position(robot.home, 0.0)
    rng = np.random.default_rng(0)
    worst, last, t = 0.0, None, 0.0
    while t <= expert.duration:
        if rng.random() < 1 / 3:                 # this tick runs; the others are missed
            w = expert.window(t, robot.home, horizon=1.0, dt=DT)
            q = shaper.path(w, DT, DT if last is None else t - last)
            last = t
            follower.set_trajectory(robot.joint_names,
                                    [TrajectoryPoint(i * DT, p) for i, p in enumerate(q)],
                                    start_time=t, now=t + 0.004, current=robot.home)
        if last is not None:
            for s in t + np.arange(0, DT, 0.005):
                worst = max(worst, np.abs(follower.target(s) - expert.command(s, robot.home)
                                          ).max() if s <= expert.duration else 0.0)
        t = round(t + DT, 9)
    assert worst < 0.01, worst   # linear interpolation between 20 ms samples only
