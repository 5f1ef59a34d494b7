"""Checkpoint round trip and clear errors for checkpoints that do not fit the robot."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import yaml

from comsim_policy.checkpoint import CheckpointError, from_pretrained, save_pretrained
from comsim_policy.config import ConfigError, PolicyConfig
from comsim_policy.inference import PolicyMismatchError, PolicyRunner
from comsim_policy.model.policy import DiffusionPolicyModel
from comsim_policy.normalizer import PolicyNormalizer
from fixtures.policy_episodes import FRONT, JOINTS, tiny_config

SIDE = '/cameras/side/image_raw'


@pytest.fixture
def ckpt(tmp_path):
    torch.manual_seed(0)
    cfg = tiny_config(cameras=(FRONT, SIDE))
    cfg.camera_sizes = {FRONT: [48, 64], SIDE: [60, 80]}
    model = DiffusionPolicyModel(cfg)
    rng = np.random.default_rng(0)
    model.normalizer = PolicyNormalizer.fit(rng.normal(size=(50, 7)), rng.normal(size=(50, 7)))
    save_pretrained(model, tmp_path / 'ckpt')
    return tmp_path / 'ckpt', model


def _obs(seed=0, sizes=((48, 64), (60, 80))):
    rng = np.random.default_rng(seed)
    imgs = {cam: rng.integers(0, 255, (2, *hw, 3), dtype=np.uint8)
            for cam, hw in zip((FRONT, SIDE), sizes, strict=True)}
    return imgs, rng.normal(size=(2, 7))


def test_round_trip_gives_identical_predictions(ckpt):
    path, model = ckpt
    a = PolicyRunner(model, 'cpu')
    b = PolicyRunner.load(path, device='cpu')
    imgs, state = _obs()
    pa, pb = a.predict(imgs, state, seed=3), b.predict(imgs, state, seed=3)
    assert pa.shape == (8, 7)
    np.testing.assert_array_equal(pa, pb)
    assert not np.allclose(pa, b.predict(imgs, state, seed=4))    # the seed matters
    b.reset()
    first = b.predict(imgs, state)
    b.reset()
    np.testing.assert_array_equal(first, b.predict(imgs, state))  # reset restarts the noise
    assert b.config.to_dict() == model.config.to_dict()
    for k, v in model.state_dict().items():
        torch.testing.assert_close(b.model.state_dict()[k], v, rtol=0, atol=0)
    assert b.execute_slice == slice(1, 5)


def test_weights_only_safetensors(ckpt):
    path, _ = ckpt
    assert sorted(p.name for p in path.iterdir()) == ['config.yaml', 'model.safetensors']


def test_compatible_robot_passes(ckpt):
    runner = PolicyRunner.load(ckpt[0], device='cpu')
    runner.check_compatible(JOINTS, {FRONT: (48, 64), SIDE: (60, 80), '/extra': (1, 1)})


@pytest.mark.parametrize('joints, cameras, match', [
    (JOINTS[:6], {FRONT: (48, 64), SIDE: (60, 80)}, r"missing \['gripper'\]"),
    ([*JOINTS[:6], 'finger'], {FRONT: (48, 64), SIDE: (60, 80)},
     r"unexpected \['finger'\]"),
    (JOINTS[::-1], {FRONT: (48, 64), SIDE: (60, 80)}, 'different order'),
    (JOINTS, {FRONT: (48, 64), '/cameras/wrist/image_raw': (60, 80)},
     r"cameras \['/cameras/side/image_raw'\] required"),
    (JOINTS, {FRONT: (48, 64), SIDE: (240, 320)},
     'camera /cameras/side/image_raw: images are 240x320 .* trained on 60x80'),
])
def test_mismatch_names_what_differs(ckpt, joints, cameras, match):
    runner = PolicyRunner.load(ckpt[0], device='cpu')
    with pytest.raises(PolicyMismatchError, match=match):
        runner.check_compatible(joints, cameras)


def test_predict_rejects_wrong_inputs(ckpt):
    runner = PolicyRunner.load(ckpt[0], device='cpu')
    imgs, state = _obs(sizes=((48, 64), (48, 64)))
    with pytest.raises(PolicyMismatchError, match='side.*48x64.*60x80'):
        runner.predict(imgs, state)
    imgs, state = _obs()
    with pytest.raises(PolicyMismatchError, match=r'state must be \(n_obs_steps=2, joints=7\)'):
        runner.predict(imgs, state[:, :6])
    with pytest.raises(PolicyMismatchError, match='no images for camera'):
        runner.predict({FRONT: imgs[FRONT]}, state)
    with pytest.raises(PolicyMismatchError, match='uint8'):
        runner.predict({**imgs, FRONT: imgs[FRONT].astype(np.float32)}, state)


def test_weights_from_a_different_config_are_refused(ckpt):
    path, _ = ckpt
    data = yaml.safe_load((path / 'config.yaml').read_text())
    data['model']['down_dims'] = [32, 128]
    (path / 'config.yaml').write_text(yaml.safe_dump(data))
    with pytest.raises(CheckpointError, match='does not fit config.yaml'):
        from_pretrained(path)


def test_missing_pieces_are_named(tmp_path, ckpt):
    with pytest.raises(CheckpointError, match='no config.yaml'):
        PolicyRunner.load(tmp_path)
    (ckpt[0] / 'model.safetensors').unlink()
    with pytest.raises(CheckpointError, match='model.safetensors is missing'):
        PolicyRunner.load(ckpt[0])


def test_config_yaml_round_trip_and_errors(tmp_path):
    cfg = PolicyConfig.from_yaml('config/policy_train.yaml')
    assert (cfg.n_obs_steps, cfg.horizon, cfg.n_action_steps) == (2, 16, 8)
    assert cfg.scheduler.num_train_timesteps == 100 and cfg.scheduler.num_inference_steps == 10
    cfg.to_yaml(tmp_path / 'c.yaml')
    assert PolicyConfig.from_yaml(tmp_path / 'c.yaml') == cfg
    assert PolicyConfig.from_yaml('config/policy_train_gpu.yaml').model.vision_width == 64
    (tmp_path / 'bad.yaml').write_text('horizon: 16\nmodel: {down_dim: [1]}\n')
    with pytest.raises(ConfigError, match=r'model: unknown key\(s\) down_dim'):
        PolicyConfig.from_yaml(tmp_path / 'bad.yaml')
    with pytest.raises(ConfigError, match='crop_size .* exceeds image_size'):
        PolicyConfig(image_size=[32, 32], crop_size=[40, 40])
    with pytest.raises(ConfigError, match='divisible by 4'):
        PolicyConfig(horizon=10, n_action_steps=4)


def test_encoder_head_is_linear_and_old_checkpoints_keep_their_relu(tmp_path):
    """New encoders end in a plain linear (features may be negative: no dead ReLU units);
    a checkpoint saved before ``encoder_head_relu`` existed still computes what it did."""
    torch.manual_seed(0)
    cfg = tiny_config()
    assert not cfg.model.encoder_head_relu
    enc = DiffusionPolicyModel(cfg).encoders[cfg.camera_keys[0]]
    with torch.no_grad():
        assert (enc(torch.rand(4, 3, 20, 28)) < 0).any()
    old_cfg = tiny_config()
    old_cfg.model.encoder_head_relu = True
    old_cfg.camera_sizes = {FRONT: [48, 64]}
    old = DiffusionPolicyModel(old_cfg)
    save_pretrained(old, tmp_path / 'old')
    raw = yaml.safe_load((tmp_path / 'old' / 'config.yaml').read_text())
    del raw['model']['encoder_head_relu']                   # as written before the option
    (tmp_path / 'old' / 'config.yaml').write_text(yaml.safe_dump(raw, sort_keys=False))
    loaded = PolicyRunner.load(tmp_path / 'old', device='cpu')
    assert loaded.config.model.encoder_head_relu
    assert isinstance(loaded.model.encoders[cfg.camera_keys[0]].head[1], torch.nn.ReLU)
    rng = np.random.default_rng(0)
    imgs = {FRONT: rng.integers(0, 255, (2, 48, 64, 3), dtype=np.uint8)}
    state = rng.normal(size=(2, 7))
    np.testing.assert_allclose(loaded.predict(imgs, state, seed=1),
                               PolicyRunner(old, 'cpu').predict(imgs, state, seed=1), atol=1e-6)
