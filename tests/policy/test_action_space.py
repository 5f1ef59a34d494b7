"""End-effector states and actions: the robot model's FK one way and IK the other recover the
recorded joints, the config refuses what cannot work, and a tiny policy trained in that space
on real episode files drives the real ``PolicyRunner`` to the recorded joint targets."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from comsim_core.episodes import Episode
from comsim_core.robot.model import RobotModel, tool_down_rotation
from comsim_policy.action_space import (
    EndEffectorSpace,
    JointSpace,
    UnreachablePose,
    action_space,
    tool_yaw,
)
from comsim_policy.config import ConfigError, PolicyConfig
from comsim_policy.inference import PolicyRunner
from comsim_policy.training.train import main
from fixtures.policy_episodes import FRONT, expected_actions, tiny_config, write_episode

JOINTS = RobotModel.load().joint_names
SEEDS = (0, 1)
N_FRAMES = 30


def tool_circle(seed: int, t: np.ndarray) -> np.ndarray:
    """Joints that move the tool round a circle over the table, pointing down and turning
    about the vertical (a motion simple in the tool's coordinates, as the bench tasks' pushes
    are), gripper breathing."""
    robot = RobotModel.load()
    phase = np.random.default_rng(seed).uniform(0, 2 * np.pi)
    out = []
    for ti in np.atleast_1d(t):
        a = 0.8 * ti + phase
        pos = np.array([0.40 + 0.08 * np.cos(a), 0.08 * np.sin(a), 0.12])
        arm = robot.ik(pos, tool_down_rotation(0.4 * np.sin(a)), q0=robot.home[:robot.n_arm],
                       pos_tol=1e-5, rot_tol=1e-4)
        out.append([*arm, 0.02 + 0.015 * np.sin(a)])
    return np.asarray(out)


def test_poses_come_back_as_the_joints_they_were_made_from():
    robot = RobotModel.load()
    space = EndEffectorSpace(JOINTS)
    q = tool_circle(3, np.arange(0, 3, 0.1))
    x = space.encode(q)
    assert x.shape == (len(q), 5) and x.dtype == np.float32
    assert np.ptp(x[:, 3]) > 0.2                                   # the yaw moves
    back = space.decode(x, q[0])
    assert back.shape == q.shape
    for row, want in zip(back, x, strict=True):      # the same tool pose ...
        pos, rot = robot.fk(row[:robot.n_arm])
        assert np.linalg.norm(pos - want[:3]) < 2e-3
        assert abs(tool_yaw(rot) - want[3]) < 5e-3
        np.testing.assert_allclose(rot[:, 2], [0, 0, -1], atol=5e-3)   # pointing down
    np.testing.assert_allclose(back[:, -1], q[:, -1], atol=1e-6)   # gripper passes through
    assert np.abs(back - q).max() < 0.02                             # ... on the same branch


def test_yaw_is_read_back_from_a_tool_pointing_down():
    for yaw in (-1.2, -0.3, 0.0, 0.4, 2.5):
        assert tool_yaw(tool_down_rotation(yaw)) == pytest.approx(yaw, abs=1e-9)


def test_configs_that_cannot_work_are_refused():
    assert PolicyConfig(action_space='end_effector').action_dim == 5
    assert PolicyConfig().action_dim == len(PolicyConfig().joint_names)
    with pytest.raises(ConfigError, match='action_space'):
        PolicyConfig(action_space='cartesian')
    with pytest.raises(ConfigError, match='limits'):
        PolicyConfig(action_space='end_effector', normalization='limits')
    with pytest.raises(ValueError, match='arm joints then its gripper'):
        action_space('end_effector', ['joint1', 'joint2'])
    assert isinstance(action_space('joint', JOINTS), JointSpace)
    assert PolicyConfig(action_space='end_effector').action_names == \
        ['x', 'y', 'z', 'yaw', 'gripper']
    assert PolicyConfig().action_names == PolicyConfig().joint_names


@pytest.fixture(scope='module')
def trained(tmp_path_factory):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp('ee')
    for s in SEEDS:
        write_episode(root / 'eps', s, n_frames=N_FRAMES, motion=tool_circle)
    cfg = tiny_config(max_steps=400, lr=3e-3, log_every=100, checkpoint_every=400,
                      cache_dir=str(root / 'cache'))
    cfg.model.down_dims = [64, 128]
    cfg.action_space = 'end_effector'
    cfg.to_yaml(root / 'tiny.yaml')
    main(['--config', str(root / 'tiny.yaml'), '--data', f'{root / "eps"}:real',
          '--out', str(root / 'ckpt')])
    yield root
    torch.set_num_threads(threads)


def test_an_end_effector_policy_reproduces_the_recorded_joint_targets(trained):
    runner = PolicyRunner.load(trained / 'ckpt', device='cpu')
    cfg = runner.config
    assert cfg.action_space == 'end_effector' and runner.model.normalizer.action.min.shape == (5,)
    errors, holds = [], []
    for seed, path in zip(SEEDS, sorted((trained / 'eps').iterdir()), strict=True):
        with Episode.open(path) as ep:
            frames = list(ep.frames([FRONT]))
            js = ep.joint_states()
        want = expected_actions(seed, N_FRAMES, motion=tool_circle)
        for t in range(1, N_FRAMES - cfg.horizon, 3):
            imgs = {FRONT: np.stack([frames[t - 1].images[FRONT], frames[t].images[FRONT]])}
            state = np.stack([np.interp(frames[k].t_ns, js.t_ns, js.position[:, j])
                              for k in (t - 1, t) for j in range(7)]).reshape(2, 7)
            pred = runner.predict(imgs, state, seed=0)
            assert pred.shape == (cfg.horizon, 7)      # joint targets, whatever the space
            target = want[t - 1:t - 1 + cfg.horizon]
            errors.append(np.abs(pred - target).mean())
            holds.append(np.abs(target - state[-1]).mean())
    assert np.mean(errors) < 0.5 * np.mean(holds), (np.mean(errors), np.mean(holds))


def test_a_pose_out_of_reach_is_refused_not_stretched_towards():
    space = EndEffectorSpace(JOINTS)
    q = tool_circle(3, np.arange(0, 1, 0.1))
    x = space.encode(q)
    far = x.copy()
    far[5:, 0] += 2.0                       # the second half of the chunk 2 m further out
    with pytest.raises(UnreachablePose, match=r'row 5 of the chunk: .* out of reach'):
        space.decode(far, q[0])
    np.testing.assert_allclose(space.decode(x[:5], q[0]), space.decode(far[:5], q[0]))
