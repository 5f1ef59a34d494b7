"""The training recipe's data rules: control rate apart from the camera rate, per-task
checkpoints, paired (ground-truth) episodes read through their real streams, normalisation."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from comsim_core.robot.model import RobotModel
from comsim_policy.config import ConfigError, PolicyConfig
from comsim_policy.data.cache import FrameCache
from comsim_policy.data.dataset import WindowDataset, frame_stride
from comsim_policy.data.episode_arrays import EpisodeArrays, EpisodeDataError, camera_stream
from comsim_policy.normalizer import PolicyNormalizer, joint_limits
from comsim_policy.training.data_setup import DataSpec, prepare
from comsim_policy.training.train import fit_normalizer
from fixtures.policy_episodes import FRONT, tiny_config, write_episode


def _episode(n: int, rate_hz: float, cams=(FRONT,)) -> EpisodeArrays:
    """Frame i shows value i in every pixel and has state = action = i (so indices are
    readable from a window)."""
    idx = np.arange(n, dtype=np.float32)
    images = {c: np.broadcast_to(np.arange(n, dtype=np.uint8)[:, None, None, None],
                                 (n, 24, 32, 3)).copy() for c in cams}
    state = np.repeat(idx[:, None], 7, 1)
    t_ns = (np.arange(n) * (1e9 / rate_hz)).astype(np.int64)
    return EpisodeArrays('ep', 'real', images, state, state.copy(), t_ns)


def test_windows_step_one_control_period_whatever_the_camera_rate():
    cfg = tiny_config()                     # control_hz 10, n_obs 2, horizon 8
    ds = WindowDataset([_episode(60, 30.0)], cfg, train=False)
    assert ds.strides == [3] and len(ds) == 60        # every frame (each phase) starts a window
    sample = ds[30]
    assert sample['state'][:, 0].tolist() == [27, 30]
    assert sample['action'][:, 0].tolist() == [27, 30, 33, 36, 39, 42, 45, 48]
    # the same seconds at 10 Hz: one frame per step
    ds10 = WindowDataset([_episode(20, 10.0)], cfg, train=False)
    assert ds10.strides == [1]
    assert ds10[10]['action'][:, 0].tolist() == [9, 10, 11, 12, 13, 14, 15, 16]


def test_a_rate_that_is_not_a_multiple_of_the_control_rate_is_refused():
    with pytest.raises(EpisodeDataError, match='15.00 Hz .* control_hz 10'):
        frame_stride(_episode(30, 15.0), 10.0)
    assert frame_stride(_episode(30, 29.4), 10.0) == 3   # a camera a little slow: still 3


def test_per_task_training_keeps_only_that_tasks_episodes(tmp_path):
    for seed in (0, 1, 2):
        write_episode(tmp_path / 'eps', seed, n_frames=12)
    cfg = tiny_config(val_fraction=0.0)
    cfg.tasks = ['synth1']
    data = prepare([DataSpec(tmp_path / 'eps')], cfg, FrameCache(None, cfg))
    assert [e.name.endswith('synth1') for e in data.train] == [True]
    assert cfg.control_hz == 10.0                         # the policy's, not the camera's
    cfg.tasks = ['no_such_task']
    with pytest.raises(EpisodeDataError, match='no episodes of tasks'):
        prepare([DataSpec(tmp_path / 'eps')], cfg, FrameCache(None, cfg))


def test_paired_episodes_are_read_through_their_real_streams():
    topics = ['/real/cameras/front/image_raw', '/sim/cameras/front/image_raw', '/joint_states']
    assert camera_stream(topics, '/cameras/front/image_raw') == '/real/cameras/front/image_raw'
    # a normal episode keeps its own topic, even if it also had a /real one
    assert camera_stream(['/cameras/front/image_raw', *topics],
                         '/cameras/front/image_raw') == '/cameras/front/image_raw'
    # a camera recorded compressed (image_transport) is read under the camera's own name
    compressed = ['/cameras/front/image_raw/compressed', '/joint_states']
    assert camera_stream(compressed, '/cameras/front/image_raw') == \
        '/cameras/front/image_raw/compressed'


def test_limits_normalisation_covers_every_reachable_joint_value():
    cfg = tiny_config()
    cfg.normalization = 'limits'
    low, high = joint_limits(cfg.joint_names)
    robot = RobotModel.load(None)
    assert np.allclose(low, robot.lower) and np.allclose(high, robot.upper)
    norm = fit_normalizer(cfg, data=None)
    q = torch.from_numpy(np.stack([low, high, (low + high) / 2])).float()
    y = norm.action.normalize(q)
    assert torch.allclose(y[0], -torch.ones(7), atol=1e-5)
    assert torch.allclose(y[1], torch.ones(7), atol=1e-5)
    # 'data' fits min/max of the training data: a value outside it maps beyond [-1, 1]
    data = PolicyNormalizer.fit(np.zeros((2, 7)) + [[0.0], [0.1]], np.zeros((2, 7)) + [[0], [1]])
    assert float(data.state.normalize(torch.full((7,), 0.2))[0]) == pytest.approx(3.0, abs=1e-4)


def test_a_joint_the_data_never_moved_is_output_as_its_value():
    """Demos that never turned one joint: the policy outputs that joint's value whatever the
    network's raw output (before: anything within +-0.5 rad of it); as an input the same joint
    keeps a moderate scale, so a state off it does not blow up."""
    states = np.array([[0.0, 0.3], [1.0, 0.3]])
    norm = PolicyNormalizer.fit(states, states)
    raw = torch.tensor([[0.9, -0.8], [-1.0, 1.0]])
    out = norm.action.unnormalize(raw)
    assert torch.allclose(out[:, 1], torch.full((2,), 0.3))
    assert torch.allclose(out[:, 0], torch.tensor([0.95, 0.0]))
    assert float(norm.state.normalize(torch.tensor([0.5, 0.4]))[1]) == pytest.approx(0.2)
    # the checkpoint's tensors are the same: min and max per dimension
    assert sorted(norm.state_dict()) == ['action.max', 'action.min', 'state.max', 'state.min']


def test_unknown_normalization_is_a_config_error():
    with pytest.raises(ConfigError, match="normalization 'minmax'"):
        PolicyConfig(normalization='minmax')


def test_normalization_data_widens_the_range_to_the_union_of_the_arms(tmp_path):
    """A policy trained on one episode but normalised over another's motion too can express
    the other's joint values (arms compared with each other share one range)."""
    write_episode(tmp_path / 'mine', 0, n_frames=12)
    write_episode(tmp_path / 'other', 5, n_frames=12)
    cfg = tiny_config(val_fraction=0.0)
    data = prepare([DataSpec(tmp_path / 'mine')], cfg, FrameCache(None, cfg))
    own = fit_normalizer(cfg, data)
    cfg.train.normalization_data = [f'{tmp_path / "other"}:real']
    union = fit_normalizer(cfg, data)
    other = prepare([DataSpec(tmp_path / 'other')], cfg, FrameCache(None, cfg)).train[0]
    lo = np.minimum(data.train[0].state.min(0), other.state.min(0))
    assert np.all(union.state.min.numpy() <= lo + 1e-5)
    assert np.all(union.state.min.numpy() <= own.state.min.numpy() + 1e-6)
    assert np.any(union.state.min.numpy() < own.state.min.numpy() - 1e-3)   # it did widen


def _model_batch(cfg: PolicyConfig, b: int = 3) -> tuple[dict, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    h, w = cfg.crop_size
    images = {k: torch.randint(0, 255, (b, cfg.n_obs_steps, 3, h, w), generator=g,
                               dtype=torch.uint8) for k in cfg.camera_keys}
    return images, torch.randn(b, cfg.n_obs_steps, len(cfg.joint_names), generator=g)


def test_fewer_vision_stages_read_keypoints_from_a_finer_map():
    from comsim_policy.model.vision import ResNetEncoder

    x = torch.zeros(1, 3, 90, 120)
    shapes = []
    for n in (4, 3, 2):
        enc = ResNetEncoder(8, 4, stages=n)
        shapes.append(tuple(enc.stages(enc.stem(x)).shape[2:]))
        assert enc(x).shape == (1, 8)
    assert shapes == [(3, 4), (6, 8), (12, 15)]
    with pytest.raises(ConfigError, match='vision_stages 5'):
        cfg = tiny_config()
        cfg.model.vision_stages = 5
        cfg.validate()


def test_state_steps_sets_which_joint_states_the_network_sees():
    from comsim_policy.model.policy import DiffusionPolicyModel

    cfg = tiny_config()
    images, state = _model_batch(cfg)
    full = DiffusionPolicyModel(cfg)
    cond = full.encode(images, state)
    for steps, changes_with_old, changes_with_new in ((0, False, False), (1, False, True),
                                                      (2, True, True)):
        cfg.model.state_steps = steps
        model = DiffusionPolicyModel(cfg)
        base = model.encode(images, state)
        old, new = state.clone(), state.clone()
        old[:, 0] += 1.0
        new[:, -1] += 1.0
        assert (not torch.equal(model.encode(images, old), base)) == changes_with_old, steps
        assert (not torch.equal(model.encode(images, new), base)) == changes_with_new, steps
        assert base.shape[1] == cond.shape[1] - (2 - steps) * len(cfg.joint_names)
    cfg.model.state_steps = 3
    with pytest.raises(ConfigError, match='state_steps 3'):
        cfg.validate()


def test_bf16_precision_trains_the_forward_pass_in_bfloat16(tmp_path):
    """``train.precision: bf16`` changes the arithmetic (the same seed gives another first
    loss, close to the fp32 one) and still writes an fp32 checkpoint; a typo is refused."""
    from comsim_policy.training.train import main  # noqa: PLC0415
    write_episode(tmp_path / 'eps', 0, n_frames=12)
    first = {}
    for precision in ('fp32', 'bf16'):
        cfg = tiny_config(max_steps=4, log_every=1, checkpoint_every=4, precision=precision,
                          cache_dir=str(tmp_path / 'cache'))
        cfg.to_yaml(tmp_path / f'{precision}.yaml')
        main(['--config', str(tmp_path / f'{precision}.yaml'), '--data',
              f'{tmp_path / "eps"}:real', '--out', str(tmp_path / precision)])
        log = (tmp_path / precision / 'log.jsonl').read_text().splitlines()
        first[precision] = json.loads(log[0])['loss']
        from safetensors.torch import load_file  # noqa: PLC0415
        weights = load_file(str(tmp_path / precision / 'model.safetensors'))
        assert {t.dtype for t in weights.values()} <= {torch.float32, torch.int64}
    assert first['bf16'] != first['fp32']
    assert first['bf16'] == pytest.approx(first['fp32'], rel=0.1)
    with pytest.raises(ConfigError, match="train.precision 'fp16'"):
        tiny_config(precision='fp16').validate()
