"""The policy node with the real `PolicyRunner` on a tiny real checkpoint, over DDS in its own
process: every safety path holds in time, the node survives it, its services answer and
/diagnostics says why.

The stand-in runner of test_policy_node.py missed a crash on these paths (rclpy's deprecated
`warn()` raised on the first stale hold and on the e-stop after it); here the node loads a
checkpoint in the trainer's format (`real_checkpoint.py`) and runs torch inference.
"""
from __future__ import annotations

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticStatus
from policy_node_support import (
    CAMS,
    SIZE,
    FakeRobot,
    assert_alive,
    diag_values,
    holds,
    is_hold,
    positions,
    start_policy,
    stop_all,
    trajectories,
)
from real_checkpoint import write_checkpoint
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import SetBool, Trigger

from comsim_core.robot.model import RobotModel

pytestmark = pytest.mark.ros
STALE_S = 0.5
# A hold is due within the stale limit, plus the watchdog tick (25 ms), plus delivery and a
# busy test loop on a shared 2-core machine.
HOLD_DUE_S = STALE_S + 0.4
DT = 0.1
# E-stop and disable publish their hold before the service replies.
AFTER_REPLY_S = 0.3


@pytest.fixture
def policy_proc():
    procs = []
    yield procs
    stop_all(procs)


def state_of(arm, proc, **received) -> str:
    """What the test saw, for a failure message: the node's log, its last status and
    /diagnostics, and how many messages of each kind arrived (a node that runs but whose
    messages never arrive reads differently from one that never ran)."""
    diag = diag_values(arm.diag[-1]) if arm.diag else None
    counts = {k: len(v) for k, v in received.items()}
    return (f'status {arm.status}; {len(arm.got)} arm commands, {counts}; {len(arm.diag)} '
            f'diagnostics, last {diag}; node log:\n{proc.log_path.read_text()}')


def enable(arm, spin_until, on=True) -> float:
    """Call ~/enable; the time the reply came."""
    resp = arm.call(spin_until, SetBool, '/policy/enable', SetBool.Request(data=on))
    assert resp.success, resp.message
    return arm.now()


def trigger(arm, spin_until, name) -> float:
    resp = arm.call(spin_until, Trigger, name, Trigger.Request())
    assert resp.success, resp.message
    return arm.now()


def wait_running(arm, spin_until, proc, n_after):
    assert arm.run(spin_until, 10, lambda: len(trajectories(arm.got[n_after:])) >= 2
                   and arm.status.get('state') == 'running'), proc.log_path.read_text()


def wait_hold(arm, spin_until, proc, n_after, t_cause, due=HOLD_DUE_S):
    """The first hold after message `n_after`, received within `due` s of `t_cause`."""
    assert arm.run(spin_until, 5, lambda: holds(arm.got[n_after:])), proc.log_path.read_text()
    k = n_after + next(i for i, m in enumerate(arm.got[n_after:]) if is_hold(m))
    assert arm.recv_times[k] - t_cause <= due, arm.recv_times[k] - t_cause
    return arm.got[k]


def wait_diag(arm, spin_until, t, level, *words):
    """A /diagnostics status sent after `t` at `level` whose message names every word."""
    def ok():
        return any(d.status[0].level == level and all(w in d.status[0].message for w in words)
                   for d in arm.diag_since(t))
    assert arm.run(spin_until, 5, ok), [(d.status[0].level, d.status[0].message)
                                        for d in arm.diag_since(t)]


def assert_all_finite(msgs):
    for m in msgs:
        values = m.data if isinstance(m, Float64MultiArray) else positions(m)
        assert np.all(np.isfinite(values)), m


def assert_within_limits(robot, msgs):
    """Every target within the joint limits; consecutive points within the velocity clamp."""
    for m in msgs:
        q = positions(m)
        assert np.all(q <= robot.upper + 1e-9) and np.all(q >= robot.lower - 1e-9), q
        assert np.all(np.abs(np.diff(q, axis=0)) <= robot.max_velocity * DT + 1e-6)


def test_real_policy_survives_every_safety_path(ros_node, spin_until, tmp_path, policy_proc):
    """One node walks through: limits, stale camera (with an e-stop during the hold), stale
    joint states, e-stop while running, NaN joint states (the hold must stay finite), reset
    and disable."""
    robot = RobotModel.load()
    # Actions denormalised to +-50 rad: far outside every joint limit.
    ckpt = write_checkpoint(tmp_path / 'ckpt', CAMS, SIZE, action_range=50.0)
    proc = start_policy(tmp_path, ckpt, stale_after_s=STALE_S, diagnostics_period_s=0.2)
    policy_proc.append(proc)
    arm = FakeRobot(ros_node, robot.home)
    assert arm.run(spin_until, 60, lambda: arm.status.get('checked')), proc.log_path.read_text()
    enable(arm, spin_until)
    wait_running(arm, spin_until, proc, 0)
    assert arm.run(spin_until, 10, lambda: len(trajectories(arm.got)) >= 4)
    # Limits: the real policy asks for +-50 rad; every published target is clamped.
    assert_within_limits(robot, arm.got)
    assert np.any(np.abs(positions(trajectories(arm.got)[-1]) - robot.home) > 0.05)  # it moves
    wait_diag(arm, spin_until, arm.now(), DiagnosticStatus.OK, 'running')
    assert float(diag_values(arm.diag[-1])['inference_latency_ms_median']) > 0
    assert_alive(proc)

    # Stale camera: hold in time, WARN naming the camera, services still answer.
    n = len(arm.got)
    arm.cameras_on = False
    t_cause = arm.camera_sent
    hold = wait_hold(arm, spin_until, proc, n, t_cause)
    np.testing.assert_allclose(positions(hold)[0], robot.home, atol=1e-9)
    assert arm.run(spin_until, 2, lambda: arm.status['state'] == 'holding')
    assert CAMS[0] in arm.status['reason']
    wait_diag(arm, spin_until, t_cause, DiagnosticStatus.WARN, 'stale', CAMS[0])
    assert_alive(proc)
    # ... and the camera returns: running again.
    arm.cameras_on = True
    wait_running(arm, spin_until, proc, len(arm.got))

    # E-stop during a hold: it answers, sends a hold, latches; reset, then enable works.
    arm.cameras_on = False
    n = len(arm.got)
    wait_hold(arm, spin_until, proc, n, arm.camera_sent)
    n = len(arm.got)
    t_reply = trigger(arm, spin_until, '/policy/estop')
    wait_hold(arm, spin_until, proc, n, t_reply, AFTER_REPLY_S)
    assert arm.run(spin_until, 3, lambda: arm.status.get('state') == 'estop')
    wait_diag(arm, spin_until, arm.now(), DiagnosticStatus.ERROR, 'e-stop')
    arm.cameras_on = True
    n = len(arm.got)
    arm.run(spin_until, 1.0)
    assert arm.got[n:] == []  # latched: fresh data does not restart it
    resp = arm.call(spin_until, SetBool, '/policy/enable', SetBool.Request(data=True))
    assert not resp.success and 'reset_estop' in resp.message
    trigger(arm, spin_until, '/policy/reset_estop')
    assert arm.run(spin_until, 3, lambda: arm.status.get('state') == 'disabled')
    enable(arm, spin_until)
    wait_running(arm, spin_until, proc, n)
    assert_alive(proc)

    # Stale joint states (the cameras keep coming).
    n = len(arm.got)
    arm.joints_on = False
    t_cause = arm.joints_sent
    wait_hold(arm, spin_until, proc, n, t_cause)
    assert arm.run(spin_until, 2, lambda: arm.status['state'] == 'holding')
    assert 'joint_states' in arm.status['reason']
    wait_diag(arm, spin_until, t_cause, DiagnosticStatus.WARN, 'stale', 'joint_states')
    arm.joints_on = True
    wait_running(arm, spin_until, proc, len(arm.got))
    assert_alive(proc)

    # E-stop while running.
    n = len(arm.got)
    t_reply = trigger(arm, spin_until, '/policy/estop')
    wait_hold(arm, spin_until, proc, n, t_reply, AFTER_REPLY_S)
    assert arm.run(spin_until, 3, lambda: arm.status.get('state') == 'estop')
    trigger(arm, spin_until, '/policy/reset_estop')
    enable(arm, spin_until)
    wait_running(arm, spin_until, proc, len(arm.got))

    # NaN joint states: dropped, a hold at the last finite position, nothing non-finite sent.
    last_finite = np.clip(robot.home + 0.01, robot.lower, robot.upper)
    arm.q = last_finite
    arm.run(spin_until, 0.3)
    n = len(arm.got)
    arm.nan_joints = True
    t_cause = arm.now()
    hold = wait_hold(arm, spin_until, proc, n, t_cause)
    np.testing.assert_allclose(positions(hold)[0], last_finite, atol=1e-9)
    assert arm.run(spin_until, 3, lambda: 'non-finite joint state' in arm.status.get('reason',
                                                                                     ''))
    assert 'joint2' in arm.status['reason']
    wait_diag(arm, spin_until, t_cause, DiagnosticStatus.WARN, 'non-finite joint state')
    arm.run(spin_until, 0.5)
    # An e-stop while the measurement is NaN: the hold is still finite.
    n = len(arm.got)
    hold = wait_hold(arm, spin_until, proc, n, trigger(arm, spin_until, '/policy/estop'),
                     AFTER_REPLY_S)
    np.testing.assert_allclose(positions(hold)[0], last_finite, atol=1e-9)
    trigger(arm, spin_until, '/policy/reset_estop')
    enable(arm, spin_until)
    arm.run(spin_until, 1.0)
    assert trajectories(arm.got[n:]) == []  # still holding: the measurement is still NaN
    assert_all_finite(arm.got)
    assert_alive(proc)
    # ... and finite again: it runs.
    arm.nan_joints = False
    wait_running(arm, spin_until, proc, len(arm.got))

    # Disable: a hold, then nothing.
    n = len(arm.got)
    wait_hold(arm, spin_until, proc, n, enable(arm, spin_until, False), AFTER_REPLY_S)
    assert arm.run(spin_until, 3, lambda: arm.status.get('state') == 'disabled')
    wait_diag(arm, spin_until, arm.now(), DiagnosticStatus.OK, 'disabled')
    arm.run(spin_until, 0.5)
    m = len(arm.got)
    arm.run(spin_until, 1.0)
    assert arm.got[m:] == []
    assert_within_limits(robot, arm.got)
    assert_all_finite(arm.got)
    values = diag_values(arm.diag[-1])
    assert int(values['clamped_actions']) > 0  # the limits did their work, and it shows
    assert values['withheld_commands'] == '0'  # holds are finite by design, not by the filter
    assert float(values['warm_up_ms']) > 0  # the real runner predicted once before any data
    assert_alive(proc)


def test_nan_policy_output_is_discarded_and_held(ros_node, spin_until, tmp_path, policy_proc):
    """Weights that compute NaN: every chunk discarded and counted, the arm held, the node
    alive and answering."""
    robot = RobotModel.load()
    proc = start_policy(tmp_path, write_checkpoint(tmp_path / 'ckpt', CAMS, SIZE, nan=True),
                        stale_after_s=STALE_S, diagnostics_period_s=0.2, start_enabled=True)
    policy_proc.append(proc)
    arm = FakeRobot(ros_node, robot.home)
    assert arm.run(spin_until, 60, lambda: arm.status.get('state') == 'holding'), \
        proc.log_path.read_text()
    assert 'NaN' in arm.status['reason']
    assert arm.run(spin_until, 5, lambda: any(
        int(diag_values(d)['nan_chunks']) > 2 and d.status[0].level == DiagnosticStatus.WARN
        and 'NaN' in d.status[0].message for d in arm.diag)), proc.log_path.read_text()
    assert trajectories(arm.got) == [] and len(holds(arm.got)) >= 1
    n = len(arm.got)
    wait_hold(arm, spin_until, proc, n, trigger(arm, spin_until, '/policy/estop'),
              AFTER_REPLY_S)
    trigger(arm, spin_until, '/policy/reset_estop')
    n = len(arm.got)
    enable(arm, spin_until)
    assert arm.run(spin_until, 5, lambda: arm.status.get('state') == 'holding' and
                   holds(arm.got[n:]))  # the next NaN chunk holds again
    assert trajectories(arm.got) == []
    assert_all_finite(arm.got)
    assert_alive(proc)


def test_dry_run_sends_nothing_to_the_arm(ros_node, spin_until, tmp_path, policy_proc):
    """Dry run on the forward controller: commands only on ~/dry_run_commands, clamped."""
    robot = RobotModel.load()
    ckpt = write_checkpoint(tmp_path / 'ckpt', CAMS, SIZE, action_range=50.0)
    proc = start_policy(tmp_path, ckpt, stale_after_s=STALE_S, start_enabled=True,
                        dry_run=True, output='forward', diagnostics_period_s=0.2)
    policy_proc.append(proc)
    forward = '/forward_position_controller/commands'
    arm = FakeRobot(ros_node, robot.home, forward, Float64MultiArray)
    dry = []
    ros_node.create_subscription(Float64MultiArray, '/policy/dry_run_commands', dry.append, 50)
    assert arm.run(spin_until, 60, lambda: len(dry) >= 10 and
                   arm.status.get('state') == 'running'), state_of(arm, proc, dry=dry)
    assert arm.status['dry_run'] is True
    assert arm.run(spin_until, 3, lambda: arm.diag and
                   diag_values(arm.diag[-1])['dry_run'] == 'True')
    q = np.array([m.data for m in dry])  # the policy asks for +-50 rad
    assert np.all(q <= robot.upper + 1e-9) and np.all(q >= robot.lower - 1e-9)
    # A hold in dry run goes to the dry-run topic too.
    n = len(dry)
    arm.cameras_on = False
    assert arm.run(spin_until, 3, lambda: arm.status.get('state') == 'holding')
    arm.run(spin_until, 0.5)  # the hold comes on another topic than the status
    assert len(dry) > n
    np.testing.assert_allclose(dry[-1].data, robot.home, atol=1e-9)
    assert arm.got == []
    assert ros_node.count_publishers(forward) == 0
    assert_alive(proc)


def test_a_stalled_inference_holds_the_arm_and_the_node_recovers(ros_node, spin_until, tmp_path,
                                                                 policy_proc, monkeypatch):
    """The real runner, its 4th prediction (3rd after the warm-up) hung for 3 s: the node holds
    within the timeout, says why, drops the late chunk and runs again."""
    robot = RobotModel.load()
    ckpt = write_checkpoint(tmp_path / 'ckpt', CAMS, SIZE)
    monkeypatch.setenv('COMSIM_TEST_STALL_CALL', '4')
    monkeypatch.setenv('COMSIM_TEST_STALL_S', '3.0')
    proc = start_policy(tmp_path, ckpt, stale_after_s=STALE_S, start_enabled=True,
                        runner_class='real_checkpoint:StallingRunner', inference_timeout_s=1.0,
                        diagnostics_period_s=0.2)
    policy_proc.append(proc)
    arm = FakeRobot(ros_node, robot.home)
    assert arm.run(spin_until, 60, lambda: holds(arm.got)), state_of(arm, proc)
    k = next(i for i, m in enumerate(arm.got) if is_hold(m))
    assert len(trajectories(arm.got[:k])) >= 2, state_of(arm, proc)  # it ran before the stall
    assert arm.run(spin_until, 3, lambda: arm.status.get('state') == 'holding')
    assert 'inference stalled' in arm.status['reason'], arm.status
    wait_diag(arm, spin_until, arm.recv_times[k], DiagnosticStatus.WARN, 'inference stalled')
    assert diag_values(arm.diag[-1])['inference_stalls'] == '1'
    # The stalled prediction returns ~2 s later; the next chunk ends the hold.
    wait_running(arm, spin_until, proc, k + 1)
    assert 'inference stalled' in proc.log_path.read_text()
    assert_alive(proc)
