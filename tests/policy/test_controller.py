"""PolicyController without ROS, on the real PolicyRunner and a tiny real checkpoint: every
control decision the policy node leaves to it (enable, e-stop, watchdog holds, NaN guards,
limits, chunk timing, streaming, warm-up)."""
from __future__ import annotations

import numpy as np
import pytest
from real_checkpoint import write_checkpoint

from comsim_core.control.limits import CommandShaper
from comsim_core.robot.model import RobotModel
from comsim_policy.controller import Command, Hold, Notice, PolicyController
from comsim_policy.inference import PolicyRunner
from comsim_policy.safety import HoldReason, State

CAMS = ['/cam/front', '/cam/side']
SIZE = (24, 32)
STALE = 0.5
ROBOT = RobotModel.load()


@pytest.fixture(scope='module')
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp('ckpt')
    return {'wide': write_checkpoint(root / 'wide', CAMS, SIZE, action_range=50.0),
            'nan': write_checkpoint(root / 'nan', CAMS, SIZE, nan=True),
            'unreachable': write_checkpoint(root / 'unreachable', CAMS, SIZE,
                                            unreachable=True)}


def controller(path, stream=False, inference_period=0.0) -> PolicyController:
    runner = PolicyRunner.load(path, device='cpu')
    shaper = CommandShaper(ROBOT.lower, ROBOT.upper, ROBOT.max_velocity)
    return PolicyController(runner, shaper, STALE, inference_period, stream=stream)


def feed(ctl, t, q=None, cameras=True, joints=True, size=SIZE):
    if joints:
        ctl.observe_joint_state(t, t, ROBOT.home if q is None else q)
    if cameras:
        for c in CAMS:
            ctl.observe_image(c, t, np.full((*size, 3), 100, np.uint8))


def running(path, stream=False, inference_period=0.0) -> PolicyController:
    ctl = controller(path, stream, inference_period)
    ctl.check_robot(ROBOT.joint_names, {c: SIZE for c in CAMS})
    assert ctl.set_enabled(True)[:2] == (True, 'enabled=True')
    return ctl


def step(ctl, now):
    """One tick and, if one is due, a prediction accepted at once: the outputs."""
    out = [ctl.update(now)]
    request = ctl.request(now)
    if request is not None:
        out.append(ctl.accept(ctl.predict(request), now))
    return [o for o in out if o is not None]


def test_nothing_moves_before_the_robot_is_checked_and_enabled(checkpoints):
    ctl = controller(checkpoints['wide'])
    feed(ctl, 10.0)
    ok, why, out = ctl.set_enabled(True)
    assert not ok and 'not yet checked' in why and out is None
    assert ctl.update(10.0) is None and ctl.request(10.0) is None
    ctl.check_robot(ROBOT.joint_names, {c: SIZE for c in CAMS})
    assert ctl.state == State.DISABLED and ctl.hold_reason == HoldReason.DISABLED
    assert step(ctl, 10.0) == []  # checked, not enabled


def test_a_chunk_is_timed_from_its_observation_and_clamped_to_the_limits(checkpoints):
    ctl = running(checkpoints['wide'])  # actions far outside every limit
    feed(ctl, 10.0)
    [cmd] = step(ctl, 10.05)
    assert isinstance(cmd, Command) and cmd.chunk and cmd.t_obs == 10.0
    # Row 0 was due at the observation (10.0 < 10.05): dropped; the next is due at 10.1.
    assert cmd.offset == pytest.approx(0.1) and ctl.dropped == 1 and ctl.chunks == 1
    assert len(cmd.targets) == 3
    assert np.all(cmd.targets <= ROBOT.upper) and np.all(cmd.targets >= ROBOT.lower)
    steps = np.abs(np.diff(np.vstack([ROBOT.home, cmd.targets]), axis=0))
    assert np.all(steps <= ROBOT.max_velocity * 0.1 + 1e-9)
    assert ctl.safety.clamped_actions > 0 and ctl.state == State.RUNNING


def test_a_stale_camera_holds_once_at_the_measured_position_and_clears(checkpoints):
    ctl = running(checkpoints['wide'])
    feed(ctl, 10.0)
    step(ctl, 10.05)
    q = ROBOT.home + 0.01
    feed(ctl, 10.6, q=q, cameras=False)
    hold = ctl.update(10.6)
    assert isinstance(hold, Hold) and hold.reason == HoldReason.STALE_CAMERA
    np.testing.assert_allclose(hold.position, np.clip(q, ROBOT.lower, ROBOT.upper))  # limits
    assert CAMS[0] in ctl.reason_text and ctl.state == State.HOLDING
    assert ctl.update(10.65) is None and ctl.request(10.65) is None  # one hold, no inference
    feed(ctl, 10.7, q=q)
    assert ctl.update(10.7) is None and ctl.state == State.RUNNING
    assert ctl.request(10.7) is not None


def test_stale_joint_states_hold_with_their_own_reason(checkpoints):
    ctl = running(checkpoints['wide'])
    feed(ctl, 10.0)
    feed(ctl, 10.6, joints=False)
    hold = ctl.update(10.6)
    assert hold.reason == HoldReason.STALE_JOINT_STATE and 'joint_states' in hold.text


def test_a_non_finite_joint_state_is_dropped_and_holds_at_the_last_finite_one(checkpoints):
    ctl = running(checkpoints['wide'])
    feed(ctl, 10.0)
    bad = ROBOT.home.copy()
    bad[1] = np.nan
    assert not ctl.observe_joint_state(10.1, 10.1, bad)
    hold = ctl.update(10.1)
    assert hold.reason == HoldReason.BAD_STATE and ROBOT.joint_names[1] in hold.text
    np.testing.assert_allclose(hold.position, ROBOT.home)
    feed(ctl, 10.4)
    assert ctl.update(10.4) is None and ctl.state == State.HOLDING  # finite for 0.3 s only
    feed(ctl, 10.7)
    assert ctl.update(10.7) is None and ctl.state == State.RUNNING


def test_the_estop_holds_latches_and_needs_a_reset_and_an_enable(checkpoints):
    ctl = running(checkpoints['wide'])
    feed(ctl, 10.0)
    request = ctl.request(10.0)
    hold = ctl.estop()
    assert hold.reason == HoldReason.ESTOP and ctl.state == State.ESTOP
    assert ctl.accept(ctl.predict(request), 10.1) is None  # a late result of the old episode
    ok, why, _ = ctl.set_enabled(True)
    assert not ok and 'reset_estop' in why
    feed(ctl, 10.2)
    assert step(ctl, 10.2) == []
    ctl.reset_estop()
    assert ctl.state == State.DISABLED and step(ctl, 10.25) == []
    assert ctl.set_enabled(True)[0] and isinstance(step(ctl, 10.25)[0], Command)


def test_disabling_holds_a_moving_arm_only(checkpoints):
    ctl = running(checkpoints['wide'])
    feed(ctl, 10.0)
    assert ctl.set_enabled(False)[2].reason == HoldReason.DISABLED
    assert ctl.set_enabled(False)[2] is None  # not moving: nothing to hold
    assert ctl.hold_reason == HoldReason.DISABLED and 'enable' in ctl.reason_text


def test_without_a_finite_measurement_a_hold_sends_nothing_and_is_counted(checkpoints):
    ctl = running(checkpoints['wide'])
    notice = ctl.estop()
    assert isinstance(notice, Notice) and notice.error and 'cannot hold' in notice.text
    assert ctl.withheld == 1


def test_nan_from_the_policy_holds_once_and_is_counted(checkpoints):
    ctl = running(checkpoints['nan'])
    feed(ctl, 10.0)
    [hold] = step(ctl, 10.0)
    assert hold.reason == HoldReason.NAN_OUTPUT and 'NaN' in ctl.reason_text
    assert ctl.state == State.HOLDING and ctl.safety.nan_chunks == 1
    feed(ctl, 10.1)
    assert step(ctl, 10.1) == []  # the next bad chunk: still the same hold
    assert ctl.safety.nan_chunks == 2 and ctl.chunks == 0


def test_a_good_chunk_ends_a_bad_output_hold(checkpoints):
    ctl = running(checkpoints['wide'])
    ctl.safety.hold('policy output contains NaN or inf; chunk discarded', HoldReason.NAN_OUTPUT)
    feed(ctl, 10.0)
    assert isinstance(step(ctl, 10.0)[-1], Command) and ctl.state == State.RUNNING


def test_a_runner_that_raises_holds_and_the_controller_goes_on(checkpoints):
    ctl = running(checkpoints['wide'])
    feed(ctl, 10.0, size=(12, 16))  # images of another size: PolicyRunner refuses them
    [hold] = step(ctl, 10.0)
    assert hold.reason == HoldReason.INFERENCE_FAILED and 'inference failed' in hold.text
    assert not ctl.busy


def test_a_chunk_whose_actions_are_all_due_is_reported_not_sent(checkpoints):
    ctl = running(checkpoints['wide'])
    feed(ctl, 10.0)
    request = ctl.request(10.0)
    notice = ctl.accept(ctl.predict(request), 10.45)  # 4 actions due 10.0 .. 10.3
    assert isinstance(notice, Notice) and not notice.error and 'already due' in notice.text
    assert ctl.dropped == 4


def test_streaming_steps_through_the_chunk_one_row_per_period(checkpoints):
    ctl = running(checkpoints['wide'], stream=True)
    feed(ctl, 10.0)
    request = ctl.request(10.0)
    assert ctl.accept(ctl.predict(request), 10.0) is None  # nothing sent on arrival
    first = ctl.update(10.0)
    assert isinstance(first, Command) and not first.chunk and first.targets.shape == (1, 7)
    assert ctl.update(10.05) is None  # the same row: not sent again
    second = ctl.update(10.1)
    assert second is not None and not np.allclose(second.targets, first.targets)
    assert np.all(np.abs(second.targets - first.targets) <= ROBOT.max_velocity * 0.1 + 1e-9)


def test_streaming_sends_every_period_when_each_chunk_is_replaced_after_one_row(checkpoints):
    """Inference every period: each new chunk replaces the old one at the same row index;
    the row due now must still be sent each period, not only the first."""
    ctl = running(checkpoints['wide'], stream=True, inference_period=0.1)
    sent = []
    for k in range(8):
        now = 10.0 + 0.1 * k
        feed(ctl, now)
        sent += [o for o in [ctl.update(now)] if isinstance(o, Command)]
        request = ctl.request(now)
        if request is not None:  # arrives 10 ms later: its row 0 is already due, dropped
            ctl.accept(ctl.predict(request), now + 0.01)
        sent += [o for o in [ctl.update(now + 0.05)] if isinstance(o, Command)]
    assert ctl.chunks == 8 and ctl.dropped == 8 and len(sent) == 7


def test_warm_up_predicts_once_on_blank_inputs(checkpoints):
    ctl = controller(checkpoints['wide'])
    assert ctl.warm_up() > 0 and ctl.diagnostics(0.0)['warm_up_ms'] != 'n/a'
    ctl.runner.config.camera_sizes = {}
    assert ctl.warm_up() is None  # no size to make blank images of


def test_diagnostics_report_the_counters(checkpoints):
    ctl = running(checkpoints['wide'])
    feed(ctl, 10.0)
    step(ctl, 10.05)
    values = ctl.diagnostics(10.05)
    assert values['chunks'] == '1' and values['dropped_actions'] == '1'
    assert float(values['inference_latency_ms_median']) > 0
    assert values['target_control_rate_hz'] == '10' and values['withheld_commands'] == '0'


def test_a_stalled_prediction_holds_and_its_late_chunk_is_dropped(checkpoints):
    ctl = running(checkpoints['wide'])
    ctl.inference_timeout_s = 1.0
    feed(ctl, 10.0)
    late = ctl.request(10.0)            # out, and not back for 1.5 s
    feed(ctl, 10.5)
    assert ctl.update(10.5) is None     # within the limit: nothing to say
    feed(ctl, 11.1)
    hold = ctl.update(11.1)
    assert isinstance(hold, Hold) and hold.reason == HoldReason.INFERENCE_STALLED
    assert 'inference stalled' in hold.text and ctl.state == State.HOLDING
    assert ctl.update(11.2) is None and ctl.stalls == 1  # one hold, not one per tick
    assert ctl.request(11.2) is None    # the worker is still busy
    assert ctl.diagnostics(11.5)['inference_stalls'] == '1'
    assert ctl.accept(ctl.predict(late), 11.5) is None  # late: dropped, not sent
    feed(ctl, 11.6)
    assert isinstance(step(ctl, 11.6)[-1], Command) and ctl.state == State.RUNNING


def test_a_zero_inference_timeout_never_holds(checkpoints):
    ctl = running(checkpoints['wide'])
    ctl.inference_timeout_s = 0.0
    feed(ctl, 10.0)
    assert ctl.request(10.0) is not None
    feed(ctl, 20.0)
    assert ctl.update(20.0) is None and ctl.stalls == 0


def test_an_end_effector_chunk_out_of_reach_holds_the_arm(checkpoints):
    """Poses 2 m away: the IK's nearest joints would stretch the arm towards them; the
    controller holds instead, says why, and sends nothing. The warm-up on blank inputs at
    all-zero joints still times the network."""
    ctl = running(checkpoints['unreachable'])
    assert ctl.runner.config.action_space == 'end_effector'
    assert ctl.warm_up() > 0
    feed(ctl, 10.0)
    out = step(ctl, 10.05)
    assert all(not isinstance(o, Command) for o in out), out
    assert ctl.hold_reason == HoldReason.INFERENCE_FAILED
    assert 'out of reach' in ctl.reason_text and ctl.chunks == 0


def test_an_end_effector_policy_is_refused_on_an_arm_with_other_kinematics(
        checkpoints, tmp_path):
    """Its poses would become joint targets for another arm's geometry. The same model at
    another path is the same arm."""
    from pathlib import Path

    from comsim_core.robot.model import DEFAULT_ARM_PATH
    from comsim_policy.controller import ControllerSetupError, build_controller

    runner = PolicyRunner.load(checkpoints['unreachable'], device='cpu')
    text = Path(DEFAULT_ARM_PATH).read_text()
    same, longer = tmp_path / 'same_arm.xml', tmp_path / 'longer_arm.xml'
    same.write_text(text)
    assert '<body name="link3" pos="0 0 0.35"' in text
    longer.write_text(text.replace('<body name="link3" pos="0 0 0.35"',
                                   '<body name="link3" pos="0 0 0.40"'))
    assert build_controller(runner, robot_model=str(same), stale_after_s=STALE)
    with pytest.raises(ControllerSetupError, match=r'cm elsewhere for the same joints'):
        build_controller(runner, robot_model=str(longer), stale_after_s=STALE)
    joint = PolicyRunner.load(checkpoints['wide'], device='cpu')     # joint targets: any arm
    assert build_controller(joint, robot_model=str(longer), stale_after_s=STALE)
