"""Chunk timing and observation history, without ROS."""
import numpy as np
import pytest

from comsim_policy.control_loop import ChunkScheduler, ObservationError, ObservationHistory


def chunk(n=16, j=2):
    return np.arange(n, dtype=float)[:, None].repeat(j, axis=1)


def test_rows_are_timed_from_the_observation_and_passed_ones_dropped():
    s = ChunkScheduler(obs_horizon=2, action_horizon=8, period=0.1)
    # Row 1 (obs_horizon-1) is due at t_obs; the chunk arrives 0.25 s later.
    c = s.accept(chunk(), t_obs=10.0, now=10.25)
    assert c.dropped == 3  # due at 10.0, 10.1, 10.2
    np.testing.assert_allclose(c.times, [10.3, 10.4, 10.5, 10.6, 10.7])
    np.testing.assert_allclose(c.actions[:, 0], [4, 5, 6, 7, 8])  # rows 1..8 executable
    assert s.advance(10.29) is None  # nothing due yet
    np.testing.assert_allclose(s.advance(10.45), [5, 5])
    np.testing.assert_allclose(s.advance(11.0), [8, 8])  # after the last: hold the last


def test_a_chunk_later_than_its_horizon_is_dropped_entirely():
    s = ChunkScheduler(2, 8, 0.1)
    c = s.accept(chunk(), t_obs=0.0, now=5.0)
    assert c.dropped == 8 and len(c.times) == 0
    assert s.advance(5.1) is None


def test_next_request_comes_just_in_time_or_at_a_fixed_rate():
    s = ChunkScheduler(2, 8, 0.1, latency_guess=0.2)
    assert s.should_request(0.0)  # no chunk yet
    s.accept(chunk(), t_obs=0.0, now=0.05)  # runs 0.1 .. 0.7
    assert not s.should_request(0.3)
    assert s.should_request(0.4)  # 0.7 - latency 0.2 - period 0.1
    s.note_latency(0.5)  # slower inference: ask earlier
    assert s.latency > 0.3 and s.should_request(0.3)

    fixed = ChunkScheduler(2, 8, 0.1, inference_period=0.8)
    assert fixed.should_request(0.0)
    fixed.note_request(0.0)
    assert not fixed.should_request(0.5) and fixed.should_request(0.8)


def test_replacement_counts_executed_actions_for_the_achieved_rate():
    s = ChunkScheduler(2, 8, 0.1)
    s.accept(chunk(), 0.0, 0.0)
    for k in range(1, 40):  # ticks at 40 Hz over one second
        s.advance(k * 0.025)
    s.accept(chunk(), 0.75, 0.75)  # replaces the rest of the first chunk
    for k in range(31, 61):
        s.advance(k * 0.025)
    assert s.achieved_rate(1.5) == pytest.approx(10.0, rel=0.05)


def test_history_samples_at_the_policy_period_not_the_arrival_rate():
    h = ObservationHistory(['/a', '/b'], obs_horizon=2, period=0.1)
    with pytest.raises(ObservationError, match='/a'):
        h.observation()
    for k in range(31):  # joints at 200 Hz, cameras at 30 Hz (b lags a little)
        h.add_image('/a', k / 30, np.full((2, 3, 3), k, np.uint8))
        h.add_image('/b', k / 30 - 0.01, np.full((2, 3, 3), k, np.uint8))
    for k in range(201):
        h.add_joint_state(k / 200, [k / 200, 0.0])
    obs = h.observation()
    assert obs.t == pytest.approx(1.0 - 0.01)  # the older of the newest images
    np.testing.assert_allclose(obs.times, [obs.t - 0.1, obs.t])
    assert obs.images['/a'].shape == (2, 2, 3, 3)
    assert [int(x[0, 0, 0]) for x in obs.images['/a']] == [27, 30]  # 0.89 -> 27/30, 0.99 -> 30
    np.testing.assert_allclose(obs.state[:, 0], obs.times, atol=0.003)
    h.add_joint_state(0.0, [0, 0])  # the clock jumped back (sim reset): history restarts
    assert h.last_times()['joint_states'] == 0.0
