"""The policy node over DDS (its own process), driven by a stand-in policy with PolicyRunner's
interface: every safety path, and chunks timed from their observation.

The stand-in (`ReplayRunner`, loaded by the node through its `runner_class` parameter) predicts
a fixed target chunk, or NaN, read from `fake.yaml` in its checkpoint directory.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import policy_node_support as support
import pytest
import yaml
from policy_node_support import CAMS, SIZE, FakeRobot, trajectories
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import SetBool, Trigger

from comsim_core.robot.model import RobotModel
from comsim_policy.config import PolicyConfig

pytestmark = pytest.mark.ros


class PolicyMismatchError(ValueError):
    pass


class ReplayRunner:
    """PolicyRunner's interface; predicts `target` for every row (or NaN rows)."""

    def __init__(self, config: PolicyConfig, fake: dict):
        self.config = config
        self.fake = fake
        self.resets = 0

    @classmethod
    def load(cls, checkpoint_dir, device=None):
        fake = yaml.safe_load((Path(checkpoint_dir) / 'fake.yaml').read_text())
        return cls(PolicyConfig.from_dict(fake.pop('config')), fake)

    def check_compatible(self, joint_names, cameras):
        missing = [n for n in self.config.joint_names if n not in joint_names]
        if missing:
            raise PolicyMismatchError(f'joints {missing} not on /joint_states')
        for topic, size in self.config.camera_sizes.items():
            if tuple(cameras.get(topic, ())) != tuple(size):
                raise PolicyMismatchError(f'{topic}: {cameras.get(topic)} != {size}')

    def predict(self, images, state):
        time.sleep(self.fake.get('latency_s', 0.02))
        assert state.shape == (self.config.n_obs_steps, len(self.config.joint_names))
        for topic in self.config.camera_topics:
            assert images[topic].shape == (self.config.n_obs_steps,
                                           *self.config.camera_sizes[topic], 3)
        rows = np.tile(np.asarray(self.fake['target'], float), (self.config.horizon, 1))
        if self.fake.get('nan'):
            rows[3, 0] = np.nan
        return rows

    def reset(self):
        self.resets += 1


def make_checkpoint(path: Path, target, size=SIZE, **fake) -> Path:
    robot = RobotModel.load()
    config = PolicyConfig(joint_names=robot.joint_names, camera_topics=CAMS,
                          camera_sizes={c: list(size) for c in CAMS}, control_hz=10.0)
    path.mkdir(parents=True, exist_ok=True)
    (path / 'fake.yaml').write_text(yaml.safe_dump(
        {'config': config.to_dict(), 'target': [float(x) for x in target], **fake}))
    return path


def start_policy(tmp_path, checkpoint, **params):
    return support.start_policy(tmp_path, checkpoint,
                                runner_class='test_policy_node:ReplayRunner', **params)


@pytest.fixture
def policy_proc():
    procs = []
    yield procs
    support.stop_all(procs)


def test_chunks_are_timed_clamped_and_estop_latches(ros_node, spin_until, tmp_path,
                                                    policy_proc):
    robot = RobotModel.load()
    far = robot.upper + 1.0  # beyond every limit: the node must clamp
    policy_proc.append(start_policy(tmp_path, make_checkpoint(tmp_path / 'ckpt', far)))
    arm = FakeRobot(ros_node, robot.home)
    assert arm.run(spin_until, 60, lambda: arm.status.get('checked')), \
        policy_proc[0].log_path.read_text()
    arm.run(spin_until, 1.0)
    assert arm.got == []  # checked but not enabled: nothing moves
    assert arm.call(spin_until, SetBool, '/policy/enable', SetBool.Request(data=True)).success
    assert arm.run(spin_until, 10, lambda: len(trajectories(arm.got)) >= 4), \
        policy_proc[0].log_path.read_text()

    dt = 0.1
    assert all(len(m.points) > 1 for m in arm.got)  # no hold: observations stayed fresh
    for msg, t_recv in zip(arm.got, arm.recv_times):
        stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        tfs = np.array([p.time_from_start.sec + p.time_from_start.nanosec * 1e-9
                        for p in msg.points])
        assert list(msg.joint_names) == robot.joint_names
        # Stamped with the observation time (in the past when it arrives); no point is due
        # before the chunk was sent (passed ones dropped); points one control period apart.
        assert stamp < t_recv and stamp > t_recv - 1.0
        assert stamp + tfs[0] >= t_recv - 0.15
        np.testing.assert_allclose(np.diff(tfs), dt, atol=1e-6)
        q = np.array([p.positions for p in msg.points])
        assert np.all(q <= robot.upper + 1e-9) and np.all(q >= robot.lower - 1e-9)
        steps = np.abs(np.diff(q, axis=0))
        assert np.all(steps <= robot.max_velocity * dt + 1e-6)

    # Diagnostics say it is running, with latency and achieved rate.
    assert arm.run(spin_until, 5, lambda: any(
        d.status[0].message == 'running' for d in arm.diag))
    values = {kv.key: kv.value for kv in arm.diag[-1].status[0].values}
    assert float(values['inference_latency_ms_median']) >= 20.0
    assert float(values['control_rate_hz']) > 5.0

    # E-stop: a hold at the measured position, then nothing; enabling is refused until reset.
    n = len(arm.got)
    assert arm.call(spin_until, Trigger, '/policy/estop', Trigger.Request()).success
    arm.run(spin_until, 1.5)
    hold = arm.got[n:]
    assert len(hold) == 1 and len(hold[0].points) == 1
    np.testing.assert_allclose(hold[0].points[0].positions, robot.home, atol=1e-9)
    assert arm.status['state'] == 'estop'
    resp = arm.call(spin_until, SetBool, '/policy/enable', SetBool.Request(data=True))
    assert not resp.success and 'reset_estop' in resp.message
    arm.run(spin_until, 1.0)
    assert len(arm.got) == n + 1
    assert arm.call(spin_until, Trigger, '/policy/reset_estop', Trigger.Request()).success
    arm.run(spin_until, 1.0)
    assert len(arm.got) == n + 1 and arm.status['state'] == 'disabled'  # latched off
    assert arm.call(spin_until, SetBool, '/policy/enable', SetBool.Request(data=True)).success
    assert arm.run(spin_until, 10, lambda: len(arm.got) > n + 2)


def test_stale_camera_holds_until_fresh(ros_node, spin_until, tmp_path, policy_proc):
    robot = RobotModel.load()
    target = robot.home + 0.05
    policy_proc.append(start_policy(tmp_path, make_checkpoint(tmp_path / 'ckpt', target),
                                    start_enabled=True))
    arm = FakeRobot(ros_node, robot.home)
    assert arm.run(spin_until, 60, lambda: len(trajectories(arm.got)) >= 2), \
        policy_proc[0].log_path.read_text()
    arm.cameras_on = False  # a camera driver freezes; joint states keep coming
    assert arm.run(spin_until, 5, lambda: arm.status.get('state') == 'holding')
    assert 'stale' in arm.status['reason'] and CAMS[0] in arm.status['reason']
    arm.run(spin_until, 0.3)
    n = len(arm.got)
    arm.run(spin_until, 1.5)
    assert len(arm.got) == n  # nothing more while holding
    last = arm.got[-1]
    assert len(last.points) == 1  # the hold: measured position
    np.testing.assert_allclose(last.points[0].positions, robot.home, atol=1e-9)
    arm.cameras_on = True
    assert arm.run(spin_until, 10, lambda: len(trajectories(arm.got[n:])) >= 1)
    assert arm.status['state'] == 'running'


def test_nan_from_the_policy_holds_and_is_never_published(ros_node, spin_until, tmp_path,
                                                          policy_proc):
    robot = RobotModel.load()
    policy_proc.append(start_policy(tmp_path, make_checkpoint(tmp_path / 'ckpt', robot.home,
                                                              nan=True), start_enabled=True))
    arm = FakeRobot(ros_node, robot.home)
    assert arm.run(spin_until, 60, lambda: arm.status.get('state') == 'holding'), \
        policy_proc[0].log_path.read_text()
    assert 'NaN' in arm.status['reason']
    arm.run(spin_until, 2.0)
    assert trajectories(arm.got) == []
    for msg in arm.got:  # at most the hold command, finite
        assert np.all(np.isfinite([x for p in msg.points for x in p.positions]))
    assert arm.run(spin_until, 5, lambda: any(
        int({kv.key: kv.value for kv in d.status[0].values}['nan_chunks']) > 1
        for d in arm.diag))


def test_dry_run_sends_nothing_to_the_arm(ros_node, spin_until, tmp_path, policy_proc):
    robot = RobotModel.load()
    policy_proc.append(start_policy(tmp_path, make_checkpoint(tmp_path / 'ckpt', robot.home),
                                    start_enabled=True, dry_run=True, output='forward'))
    arm = FakeRobot(ros_node, robot.home, '/forward_position_controller/commands',
                    Float64MultiArray)
    dry = []
    ros_node.create_subscription(Float64MultiArray, '/policy/dry_run_commands', dry.append, 50)
    assert arm.run(spin_until, 60, lambda: len(dry) >= 10), policy_proc[0].log_path.read_text()
    assert arm.got == []
    assert ros_node.count_publishers('/forward_position_controller/commands') == 0
    np.testing.assert_allclose(dry[-1].data, robot.home, atol=1e-9)
    assert arm.status['dry_run'] is True


def test_mismatched_checkpoint_is_refused_with_no_motion(ros_node, spin_until, tmp_path,
                                                         policy_proc):
    robot = RobotModel.load()
    # Trained on 48x64 images; this robot's cameras send 24x32.
    ckpt = make_checkpoint(tmp_path / 'ckpt', robot.home, size=(48, 64))
    proc = start_policy(tmp_path, ckpt, start_enabled=True)
    policy_proc.append(proc)
    arm = FakeRobot(ros_node, robot.home)
    assert arm.run(spin_until, 60, lambda: proc.poll() is not None)
    assert proc.returncode == 2
    log = proc.log_path.read_text()
    assert 'does not match this robot' in log and '[48, 64]' in log, log
    assert arm.got == []
