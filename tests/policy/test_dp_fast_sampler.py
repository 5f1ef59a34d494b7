"""The fast CPU sampling path computes what the plain ``DiffusionPolicyModel.sample`` does."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from comsim_policy.config import PolicyConfig
from comsim_policy.inference import PolicyRunner
from comsim_policy.model.fast import FastSampler, PackedConv1d
from comsim_policy.model.policy import DiffusionPolicyModel
from comsim_policy.normalizer import PolicyNormalizer
from fixtures.policy_episodes import FRONT, tiny_config

ROOT = Path(__file__).resolve().parents[2]
SIDE = '/cameras/side/image_raw'


@pytest.fixture(autouse=True)
def one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _model(cfg: PolicyConfig, seed: int = 0) -> DiffusionPolicyModel:
    torch.manual_seed(seed)
    model = DiffusionPolicyModel(cfg)
    rng = np.random.default_rng(seed)
    model.normalizer = PolicyNormalizer.fit(rng.normal(size=(50, cfg.state_dim)),
                                            rng.normal(size=(50, cfg.action_dim)) * 0.5)
    return model


def _obs(cfg: PolicyConfig, seed: int = 0) -> tuple[dict, np.ndarray]:
    rng = np.random.default_rng(seed)
    imgs = {cam: rng.integers(0, 255, (cfg.n_obs_steps, *cfg.camera_sizes[cam], 3),
                              dtype=np.uint8) for cam in cfg.camera_topics}
    return imgs, rng.normal(size=(cfg.n_obs_steps, len(cfg.joint_names)))


@pytest.mark.parametrize('conv', [nn.Conv1d(7, 16, 5, padding=2), nn.Conv1d(16, 16, 3, 2, 1),
                                  nn.Conv1d(16, 5, 1), nn.Conv1d(6, 8, 3, bias=False),
                                  nn.ConvTranspose1d(16, 16, 4, 2, 1),
                                  nn.ConvTranspose1d(8, 4, 3, 2, 0)])
@pytest.mark.parametrize('batch', [1, 3])
def test_packed_conv_equals_the_module(conv, batch):
    torch.manual_seed(0)
    x = torch.randn(batch, conv.in_channels, 8)
    with torch.no_grad():
        torch.testing.assert_close(PackedConv1d(conv)(x), conv(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('which', ['tiny', 'default'])
def test_fast_runner_gives_the_plain_runners_actions(which):
    if which == 'tiny':
        cfg = tiny_config(cameras=(FRONT, SIDE))
        cfg.camera_sizes = {FRONT: [48, 64], SIDE: [60, 80]}
    else:  # the deployed CPU architecture
        cfg = PolicyConfig.from_yaml(ROOT / 'config/policy_train.yaml')
        cfg.camera_sizes = {c: [240, 320] for c in cfg.camera_topics}
    model = _model(cfg)
    plain = PolicyRunner(model, 'cpu', fast=False)
    fast = PolicyRunner(model, 'cpu')
    assert plain.sampler is None and isinstance(fast.sampler, FastSampler)
    for runner in (plain, fast):    # compared as sampled: an end-effector policy's IK turns
        runner.space.decode = lambda actions, state: actions    # 1e-5 into 1e-4 near singular
    for seed in range(3):                                       # random poses
        imgs, state = _obs(cfg, seed)
        a, b = plain.predict(imgs, state, seed=seed), fast.predict(imgs, state, seed=seed)
        assert a.shape == (cfg.horizon, cfg.action_dim)
        np.testing.assert_allclose(b, a, rtol=0, atol=2e-5)
    # the runner's own noise stream is the same too
    plain.reset()
    fast.reset()
    np.testing.assert_allclose(fast.predict(imgs, state), plain.predict(imgs, state), atol=2e-5)


def test_batches_and_image_memory_formats_match():
    cfg = tiny_config(cameras=(FRONT, SIDE))
    model = _model(cfg).eval()
    runner = PolicyRunner(model, 'cpu', fast=False)
    torch.manual_seed(1)
    imgs = {k: torch.randint(0, 255, (3, 2, 3, *cfg.crop_size), dtype=torch.uint8)
            for k in cfg.camera_keys}
    state = torch.randn(3, 2, 7)
    with torch.inference_mode():
        ref = model.sample(imgs, state, runner.scheduler, torch.Generator().manual_seed(0))
        got = FastSampler(model).sample(imgs, state, runner.scheduler,
                                        torch.Generator().manual_seed(0))
        torch.testing.assert_close(got, ref, rtol=0, atol=2e-5)
        nchw = model.encode(imgs, state, memory_format=torch.contiguous_format)
        torch.testing.assert_close(model.encode(imgs, state), nchw, rtol=0, atol=1e-5)


def test_new_weights_are_picked_up():
    """Packed copies are rebuilt after load_state_dict: never sample with stale weights."""
    cfg = tiny_config()
    cfg.camera_sizes = {FRONT: [48, 64]}
    runner = PolicyRunner(_model(cfg, 0), 'cpu')
    imgs, state = _obs(cfg)
    before = runner.predict(imgs, state, seed=0)
    runner.model.load_state_dict(_model(cfg, 1).state_dict())
    after = runner.predict(imgs, state, seed=0)
    assert not np.allclose(before, after, atol=1e-3)
    reference = PolicyRunner(_model(cfg, 1), 'cpu', fast=False).predict(imgs, state, seed=0)
    np.testing.assert_allclose(after, reference, rtol=0, atol=2e-5)
