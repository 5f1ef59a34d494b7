"""The image preprocessing is one object saved with the weights and used by training and the
runner alike; checkpoints saved before it was load with the preprocessing they were trained
with, and a preprocessing that disagrees with its config is refused in one line."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import yaml
from real_checkpoint import write_checkpoint
from safetensors import safe_open
from safetensors.torch import save_file

from comsim_policy.checkpoint import WEIGHTS, CheckpointError, from_pretrained, save_pretrained
from comsim_policy.data.dataset import WindowDataset
from comsim_policy.data.episode_arrays import EpisodeArrays
from comsim_policy.inference import PolicyRunner
from comsim_policy.preprocessing import METADATA_KEY, ImagePreprocessor

CAMS = ['/cam/front']
SIZE = (24, 32)


def rewrite_metadata(weights, change):
    with safe_open(str(weights), 'pt') as f:
        metadata = dict(f.metadata())
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    change(metadata)
    save_file(tensors, str(weights), metadata=metadata)


def observation(seed=0, size=SIZE):
    rng = np.random.default_rng(seed)
    return ({c: rng.integers(0, 255, (2, *size, 3), dtype=np.uint8) for c in CAMS},
            rng.normal(size=(2, 7)))


def test_the_preprocessing_travels_with_the_weights(tmp_path):
    # Large enough that the encoder's last feature map is more than one pixel (the 24x32
    # checkpoint's is 1x1: its actions do not depend on the images at all).
    size = (64, 96)
    path = write_checkpoint(tmp_path / 'ckpt', CAMS, size)
    runner = PolicyRunner.load(path, device='cpu')
    model = PolicyRunner.load(path, device='cpu').model
    custom = ImagePreprocessor(model.preprocessor.image_size, model.preprocessor.crop_size,
                               mean=(0.5, 0.5, 0.5), std=(0.1, 0.2, 0.3))
    model.preprocessor = custom
    save_pretrained(model, tmp_path / 'custom')
    loaded = PolicyRunner.load(tmp_path / 'custom', device='cpu')
    assert loaded.model.preprocessor == custom
    images, state = observation(size=size)
    # The statistics are the saved ones, not defaults: predictions follow them.
    assert not np.allclose(loaded.predict(images, state, seed=1),
                           runner.predict(images, state, seed=1))
    assert sorted(p.name for p in (tmp_path / 'custom').iterdir()) == ['config.yaml', WEIGHTS]


def test_a_checkpoint_saved_before_the_preprocessing_loads_with_its_config_sizes(tmp_path):
    path = write_checkpoint(tmp_path / 'ckpt', CAMS, SIZE)
    images, state = observation()
    new = PolicyRunner.load(path, device='cpu').predict(images, state, seed=2)
    rewrite_metadata(path / WEIGHTS, lambda m: m.pop(METADATA_KEY))
    old = PolicyRunner.load(path, device='cpu')
    cfg = old.config
    assert old.model.preprocessor == ImagePreprocessor(tuple(cfg.image_size),
                                                       tuple(cfg.crop_size))
    np.testing.assert_array_equal(old.predict(images, state, seed=2), new)


def test_preprocessing_that_disagrees_with_the_config_is_refused_in_one_line(tmp_path):
    path = write_checkpoint(tmp_path / 'ckpt', CAMS, SIZE)
    data = yaml.safe_load((path / 'config.yaml').read_text())
    data['image_size'] = [26, 34]
    (path / 'config.yaml').write_text(yaml.safe_dump(data))
    with pytest.raises(CheckpointError, match=r'image_size \[24, 32\] vs \[26, 34\]') as err:
        from_pretrained(path)
    assert str(path / WEIGHTS) in str(err.value) and '\n' not in str(err.value)


def test_malformed_saved_preprocessing_is_refused_naming_the_file(tmp_path):
    path = write_checkpoint(tmp_path / 'ckpt', CAMS, SIZE)
    rewrite_metadata(path / WEIGHTS, lambda m: m.update({METADATA_KEY: json.dumps(
        {'image_size': [24, 32]})}))
    with pytest.raises(CheckpointError, match=f'{WEIGHTS}: bad {METADATA_KEY} metadata'):
        from_pretrained(path)


def test_training_windows_and_the_runner_see_the_same_pixels(tmp_path):
    """A validation window (cached resize + centre crop) and the runner's input from the
    native frames are equal, byte for byte."""
    runner = PolicyRunner.load(write_checkpoint(tmp_path / 'ckpt', CAMS, SIZE), device='cpu')
    cfg = runner.config
    native = np.random.default_rng(3).integers(0, 255, (3, 48, 64, 3), dtype=np.uint8)
    cfg.camera_sizes = {CAMS[0]: [48, 64]}
    pre = runner.model.preprocessor
    ep = EpisodeArrays('ep', 'real', {CAMS[0]: np.stack([pre.resize(f) for f in native])},
                       np.zeros((3, 7), np.float32), np.zeros((3, 7), np.float32),
                       np.arange(3, dtype=np.int64) * 100_000_000)  # 10 Hz: stride 1
    window = WindowDataset([ep], cfg, train=False)[2]['images'][cfg.camera_keys[0]]
    got, _ = runner.preprocess({CAMS[0]: native[1:]}, np.zeros((2, 7)))
    torch.testing.assert_close(got[cfg.camera_keys[0]][0], window, rtol=0, atol=0)
    assert window.shape[-2:] == tuple(cfg.crop_size)


def test_normalise_scales_then_standardises_per_channel():
    pre = ImagePreprocessor((4, 4), (2, 2), mean=(0.0, 0.5, 1.0), std=(1.0, 0.5, 0.25))
    x = torch.full((1, 3, 2, 2), 255, dtype=torch.uint8)
    np.testing.assert_allclose(pre.normalise(x)[0, :, 0, 0].numpy(), [1.0, 1.0, 0.0])


def test_a_crop_larger_than_the_image_is_refused():
    with pytest.raises(ValueError, match='exceeds image_size'):
        ImagePreprocessor((20, 20), (24, 16))
