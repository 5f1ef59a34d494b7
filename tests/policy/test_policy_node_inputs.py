"""The policy node's inputs and outputs on a real lab, over DDS with the real runner on a tiny
real checkpoint: JPEG cameras (``image_transport: compressed``), a best-effort camera driver
(reached only through ``qos_overrides``), and the gripper on its own forward-command topic.
"""
from __future__ import annotations

import numpy as np
import pytest
from policy_node_support import (
    CAMS,
    SIZE,
    FakeRobot,
    assert_alive,
    holds,
    jpeg_msg,
    positions,
    start_policy,
    stop_all,
    trajectories,
)
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from real_checkpoint import write_checkpoint
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import SetBool

from comsim_core.episodes.images import decode_rgb
from comsim_core.robot.model import RobotModel

pytestmark = pytest.mark.ros
BEST_EFFORT = QoSProfile(depth=5, reliability=ReliabilityPolicy.BEST_EFFORT,
                         history=HistoryPolicy.KEEP_LAST)


@pytest.fixture
def policy_proc():
    procs = []
    yield procs
    stop_all(procs)


def pattern() -> np.ndarray:
    """A smooth colour frame of the checkpoint's size (JPEG keeps it close)."""
    h, w = SIZE
    y, x = np.mgrid[0:h, 0:w]
    return np.dstack([x * 255 // (w - 1), y * 255 // (h - 1),
                      np.full((h, w), 120)]).astype(np.uint8)


def test_compressed_jpeg_cameras_drive_the_policy(ros_node, spin_until, tmp_path, policy_proc,
                                                  monkeypatch):
    """image_transport: compressed: the node subscribes to <camera>/compressed, decodes the
    JPEG frames with the shared decoder (the policy sees exactly those pixels), checks their
    size against the checkpoint and sends its first chunk."""
    robot = RobotModel.load()
    saved = tmp_path / 'seen.npz'
    monkeypatch.setenv('COMSIM_TEST_SAVE_IMAGES', str(saved))
    proc = start_policy(tmp_path, write_checkpoint(tmp_path / 'ckpt', CAMS, SIZE),
                        image_transport='compressed', start_enabled=True,
                        runner_class='real_checkpoint:ImageSavingRunner')
    policy_proc.append(proc)
    frame = pattern()
    arm = FakeRobot(ros_node, robot.home, compressed=True, frame=frame)
    assert arm.run(spin_until, 60, lambda: trajectories(arm.got) and saved.exists()), \
        proc.log_path.read_text()
    assert arm.status['checked'] and arm.status['state'] == 'running', arm.status
    assert len(positions(trajectories(arm.got)[0])) >= 1
    seen = np.load(saved)
    want = decode_rgb(jpeg_msg(frame, ros_node))          # the same bytes, decoded here
    assert np.abs(want.astype(int) - frame.astype(int)).max() <= 12   # JPEG, quality 95
    for key in seen.files:                                 # both cameras, every obs step
        assert seen[key].shape[1:] == (*SIZE, 3)
        np.testing.assert_array_equal(seen[key][-1], want)
    assert 'compressed' in proc.log_path.read_text()
    assert_alive(proc)


def test_best_effort_cameras_need_the_qos_override(ros_node, spin_until, tmp_path, policy_proc):
    """A best-effort camera driver never reaches the default (reliable) image subscription:
    the node gives up at start-up, naming the override to set (exit 2). With
    qos_overrides.<camera>.subscription.reliability: best_effort it runs."""
    robot = RobotModel.load()
    ckpt = write_checkpoint(tmp_path / 'ckpt', CAMS, SIZE)
    arm = FakeRobot(ros_node, robot.home, camera_qos=BEST_EFFORT)

    reliable = start_policy(tmp_path, ckpt, start_enabled=True, startup_timeout_s=4.0)
    policy_proc.append(reliable)
    assert arm.run(spin_until, 60, lambda: reliable.poll() is not None), \
        reliable.log_path.read_text()
    log = reliable.log_path.read_text()
    assert reliable.returncode == 2, log
    assert arm.got == [] and 'Traceback' not in log
    error = next(line for line in log.splitlines() if 'error: no data on' in line)
    assert f'no data on [{CAMS[0]!r}, {CAMS[1]!r}]' in error, error
    assert f'qos_overrides.{CAMS[0]}.subscription.reliability: best_effort' in error, error

    overrides = {c: {'subscription': {'reliability': 'best_effort'}} for c in CAMS}
    (tmp_path / 'second').mkdir()
    proc = start_policy(tmp_path / 'second', ckpt, start_enabled=True,
                        qos_overrides=overrides)
    policy_proc.append(proc)
    assert arm.run(spin_until, 60, lambda: trajectories(arm.got)), proc.log_path.read_text()
    assert arm.status['checked'] and arm.status['state'] == 'running', arm.status
    assert_alive(proc)


def test_a_misspelt_qos_override_is_one_line(ros_node, spin_until, tmp_path, policy_proc):
    proc = start_policy(tmp_path, write_checkpoint(tmp_path / 'ckpt', CAMS, SIZE),
                        qos_overrides={'/test_cams/frnt/image_raw': {
                            'subscription': {'reliability': 'best_effort'}}})
    policy_proc.append(proc)
    assert proc.wait(timeout=120) == 2
    log = proc.log_path.read_text()
    assert 'Traceback' not in log
    assert ("parameter 'qos_overrides./test_cams/frnt/image_raw.subscription.reliability' "
            "names no subscription of this node; its subscriptions: ['/joint_states', "
            f"'{CAMS[0]}', '{CAMS[1]}']") in log, log
    assert f'{tmp_path / "policy.yaml"}: node' in log, log


def test_gripper_goes_alone_on_its_forward_topic(ros_node, spin_until, tmp_path, policy_proc):
    """gripper_output: forward_topic: the arm's trajectories hold the six arm joints only, the
    gripper's targets arrive one value at a time on gripper_topic (within its limits), and a
    hold (disable) holds the gripper too."""
    robot = RobotModel.load()
    g = robot.joint_names.index('gripper')
    proc = start_policy(tmp_path, write_checkpoint(tmp_path / 'ckpt', CAMS, SIZE),
                        start_enabled=True, gripper_output='forward_topic',
                        gripper_topic='/test_gripper/commands')
    policy_proc.append(proc)
    grip: list = []
    ros_node.create_subscription(Float64MultiArray, '/test_gripper/commands', grip.append, 50)
    arm = FakeRobot(ros_node, robot.home)
    assert arm.run(spin_until, 60, lambda: len(trajectories(arm.got)) >= 3 and len(grip) >= 4),\
        proc.log_path.read_text()
    arm_joints = [n for n in robot.joint_names if n != 'gripper']
    for msg in arm.got:
        assert list(msg.joint_names) == arm_joints
        assert positions(msg).shape[1] == len(arm_joints)
    values = np.array([m.data for m in grip])
    assert values.shape[1] == 1
    assert np.all(values >= robot.lower[g] - 1e-9) and np.all(values <= robot.upper[g] + 1e-9)
    # A chunk's gripper targets come as they fall due: about one per control period (10 Hz).
    n_grip = len(grip)
    arm.run(spin_until, 2.0)
    assert 8 <= len(grip) - n_grip <= 30, len(grip) - n_grip

    n_arm, n_grip = len(arm.got), len(grip)
    resp = arm.call(spin_until, SetBool, '/policy/enable', SetBool.Request(data=False))
    assert resp.success, resp.message
    assert arm.run(spin_until, 5, lambda: holds(arm.got[n_arm:]) and len(grip) > n_grip)
    hold = holds(arm.got[n_arm:])[0]
    np.testing.assert_allclose(positions(hold)[0], np.delete(robot.home, g), atol=1e-9)
    arm.run(spin_until, 0.5)
    np.testing.assert_allclose(grip[-1].data, [robot.home[g]], atol=1e-9)
    assert_alive(proc)
