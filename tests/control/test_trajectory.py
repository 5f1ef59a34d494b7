import numpy as np
import pytest

from comsim_core.control.limits import CommandShaper
from comsim_core.control.trajectory import TrajectoryError, TrajectoryFollower, TrajectoryPoint

NAMES = ['a', 'b', 'c']


def test_no_command_means_no_target():
    assert TrajectoryFollower(NAMES).target(1.0) is None


def test_trajectory_starts_from_current_state_and_interpolates_linearly():
    f = TrajectoryFollower(NAMES)
    f.set_trajectory(NAMES, [TrajectoryPoint(1.0, np.array([1.0, 2.0, 3.0]))],
                     start_time=0.0, now=10.0, current=np.zeros(3))
    np.testing.assert_allclose(f.target(10.0), [0, 0, 0])
    np.testing.assert_allclose(f.target(10.5), [0.5, 1.0, 1.5])
    np.testing.assert_allclose(f.target(12.0), [1, 2, 3])  # held after the end


def test_joint_order_is_mapped_and_partial_goals_rejected():
    f = TrajectoryFollower(NAMES)
    f.set_trajectory(['c', 'a', 'b'], [TrajectoryPoint(0.0, np.array([3.0, 1.0, 2.0]))],
                     start_time=0.0, now=0.0, current=np.zeros(3))
    np.testing.assert_allclose(f.target(0.1), [1, 2, 3])
    with pytest.raises(TrajectoryError, match='missing'):
        f.set_trajectory(['a', 'b'], [TrajectoryPoint(1.0, np.ones(2))], 0.0, 0.0, np.zeros(3))


def test_future_start_time_holds_until_start():
    f = TrajectoryFollower(NAMES)
    f.set_trajectory(NAMES, [TrajectoryPoint(1.0, np.ones(3))], start_time=5.0, now=4.0,
                     current=np.zeros(3))
    np.testing.assert_allclose(f.target(4.5), np.zeros(3))
    np.testing.assert_allclose(f.target(5.5), 0.5 * np.ones(3))


def test_cubic_when_velocities_given_hits_knots_with_zero_end_velocity():
    f = TrajectoryFollower(['a'])
    pts = [TrajectoryPoint(0.0, np.array([0.0]), np.array([0.0])),
           TrajectoryPoint(1.0, np.array([1.0]), np.array([0.0]))]
    f.set_trajectory(['a'], pts, 0.0, 0.0, np.zeros(1))
    eps = 1e-4
    assert f.target(0.5)[0] == pytest.approx(0.5)
    assert abs(f.target(1.0 - eps)[0] - 1.0) < 1e-6  # zero slope at the end, unlike linear
    assert f.target(0.25)[0] < 0.25


@pytest.mark.parametrize('bad', [
    [TrajectoryPoint(1.0, np.ones(3)), TrajectoryPoint(0.5, np.ones(3))],
    [TrajectoryPoint(1.0, np.array([np.nan, 0, 0]))],
])
def test_bad_trajectories_are_rejected(bad):
    with pytest.raises(TrajectoryError):
        TrajectoryFollower(NAMES).set_trajectory(NAMES, bad, 0.0, 0.0, np.zeros(3))


def test_forward_command_checks_length():
    f = TrajectoryFollower(NAMES)
    with pytest.raises(TrajectoryError, match='expected 3'):
        f.set_position([1.0, 2.0], 0.0)
    f.set_position([1.0, 2.0, 3.0], 0.0)
    np.testing.assert_allclose(f.target(9.0), [1, 2, 3])


def test_shaper_clamps_limits_and_velocity():
    s = CommandShaper([-1, -1], [1, 1], [0.5, 2.0])
    np.testing.assert_allclose(s([5.0, -5.0], 0.1), [1.0, -1.0])  # first call: limits only
    np.testing.assert_allclose(s([-1.0, 1.0], 0.1), [0.95, -0.8])  # 0.05 and 0.2 per step
    with pytest.raises(ValueError, match='NaN'):
        s([np.nan, 0.0], 0.1)


def test_targets_at_many_times_equal_target_at_each():
    f = TrajectoryFollower(['a', 'b'])
    times = np.linspace(-0.5, 3.5, 97)
    assert f.targets(times) is None
    f.set_position([0.1, 0.2], 0.0)
    np.testing.assert_array_equal(f.targets(times), np.tile([0.1, 0.2], (97, 1)))
    pts = [TrajectoryPoint(0.5, np.array([1.0, -1.0]), np.array([0.5, 0.0])),
           TrajectoryPoint(1.0, np.array([2.0, 0.0])),                      # linear segment
           TrajectoryPoint(2.0, np.array([1.5, 0.5]), np.array([0.0, 0.0])),
           TrajectoryPoint(2.5, np.array([1.0, 1.0]), np.array([0.0, 0.0]))]  # cubic segment
    f.set_trajectory(['b', 'a'], [TrajectoryPoint(p.time_from_start, p.positions[::-1],
                                                  None if p.velocities is None
                                                  else p.velocities[::-1]) for p in pts],
                     0.0, 0.25, np.array([0.0, 0.0]))
    many = f.targets(times)
    one_by_one = np.stack([f.target(t) for t in times])
    np.testing.assert_allclose(many, one_by_one, atol=1e-12)
    # spot checks against the rules: held before start, knots hit, last point held after
    np.testing.assert_allclose(f.target(0.0), [0.0, 0.0])
    np.testing.assert_allclose(f.target(0.75), [1.0, -1.0], atol=1e-12)
    np.testing.assert_allclose(f.target(3.0), [1.0, 1.0])
