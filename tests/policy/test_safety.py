"""SafetyMonitor without ROS: states, holds, e-stop latch, NaN guard, limits and velocity."""
import numpy as np
import pytest

from comsim_core.control.limits import CommandShaper
from comsim_policy.safety import SafetyMonitor, UnsafeCommand


def monitor():
    return SafetyMonitor(CommandShaper([-1, -1], [1, 1], [2.0, 2.0]), stale_after_s=0.5)


def test_enable_estop_latch_and_reset():
    s = monitor()
    assert s.state == 'disabled' and not s.may_move
    assert s.set_enabled(True)[0] and s.may_move
    s.estop()
    assert s.state == 'estop' and not s.may_move
    ok, why = s.set_enabled(True)
    assert not ok and 'reset_estop' in why and s.state == 'estop'
    s.reset_estop()
    assert s.state == 'disabled'  # cleared, but not moving until enabled again
    assert s.set_enabled(True)[0] and s.state == 'running'


def test_stale_streams_hold_and_clear_when_fresh():
    s = monitor()
    s.set_enabled(True)
    assert s.watchdog(10.0, {'joint_states': 9.9, '/cam': 9.8}) is None
    reason = s.watchdog(10.0, {'joint_states': 9.99, '/cam': 9.2})
    assert s.state == 'holding' and '/cam 0.80 s old' in reason
    assert 'never received' in s.watchdog(10.0, {'joint_states': None, '/cam': 9.9})
    assert s.watchdog(10.1, {'joint_states': 10.0, '/cam': 10.0}) is None
    assert s.may_move


def test_nan_and_wrong_shape_are_refused():
    s = monitor()
    with pytest.raises(UnsafeCommand, match='NaN'):
        s.check_chunk([[0.0, np.nan]], 2)
    assert s.nan_chunks == 1
    with pytest.raises(UnsafeCommand, match='shape'):
        s.check_chunk([[0.0, 0.0, 0.0]], 2)


def test_shape_clamps_limits_and_velocity_from_the_reference():
    s = monitor()
    out = s.shape([0.1, 0.2, 0.3, 10.0], [[5, -5]] * 4, ref_time=0.0, ref_q=[0.0, 0.0])
    # 2 rad/s: 0.2 per 0.1 s step, then the limit (1) once there is time enough.
    np.testing.assert_allclose(out, [[0.2, -0.2], [0.4, -0.4], [0.6, -0.6], [1.0, -1.0]])
    assert s.clamped_actions == 4
    s.shape([0.1], [[0.1, 0.1]], ref_time=0.0, ref_q=[0.0, 0.0])
    assert s.clamped_actions == 4  # within every limit: not counted
    # A first action due at the reference time may not jump.
    out = s.shape([0.0], [[1.0, 1.0]], ref_time=0.0, ref_q=[0.0, 0.0])
    assert np.abs(out).max() < 1e-6


def test_non_finite_joint_state_holds_until_finite_for_the_stale_limit():
    s = monitor()
    s.set_enabled(True)
    fresh = {'joint_states': 10.0, '/cam': 10.0}
    assert s.check_joint_state(10.0, [0.1, 0.2], ['a', 'b'])
    assert not s.check_joint_state(10.0, [0.1, np.nan], ['a', 'b'])
    reason = s.watchdog(10.1, fresh)
    assert s.state == 'holding' and s.observation_hold
    assert reason.startswith('non-finite joint state') and 'b NaN' in reason
    assert s.check_joint_state(10.2, [0.1, 0.2], ['a', 'b'])
    assert s.watchdog(10.4, fresh) is not None  # finite for 0.2 s only
    assert s.watchdog(10.6, {'joint_states': 10.6, '/cam': 10.6}) is None and s.may_move


def test_a_bad_chunk_hold_is_not_an_observation_hold():
    s = monitor()
    s.set_enabled(True)
    s.hold('policy output contains NaN or inf; chunk discarded')
    assert not s.observation_hold
    assert s.watchdog(10.0, {'joint_states': 10.0}) is not None  # fresh data does not clear it


def test_hold_target_is_clipped_and_never_non_finite():
    s = monitor()
    np.testing.assert_array_equal(s.hold_target([2.0, -0.5]), [1.0, -0.5])
    assert s.hold_target(None) is None
    assert s.hold_target([np.nan, 0.0]) is None  # np.clip(NaN) is NaN: nothing to send
    assert s.hold_target([np.inf, 0.0]) is None
    assert s.hold_target([0.0]) is None
