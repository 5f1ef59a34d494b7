"""Paired-window augmentations: the sim and real clips change alike, greys stay grey, a
mirrored window loses its actions, and training runs with them on."""
import math

import pytest
import torch
from ns_helpers import one_thread, tiny_config  # noqa: F401

from comsim_neural_sim.data import ClipDataset, synthetic_pair
from comsim_neural_sim.data.augment import augment_window, hue_rotation, rotate_hue
from comsim_neural_sim.errors import ConfigError
from comsim_neural_sim.training.train import train


def test_hue_rotation_keeps_greys_and_turns_primaries_in_a_cycle():
    rot = hue_rotation(2 * math.pi / 3)
    assert torch.allclose(rot @ rot.T, torch.eye(3), atol=1e-6)
    grey = torch.tensor([0.3, 0.3, 0.3])
    assert torch.allclose(rot @ grey, grey, atol=1e-6)
    assert torch.allclose(rot @ torch.tensor([1.0, 0.0, 0.0]), torch.tensor([0.0, 1.0, 0.0]),
                          atol=1e-6)
    clip = torch.rand(2, 3, 4, 5) * 2 - 1
    assert torch.allclose(rotate_hue(clip, hue_rotation(0.0)), clip, atol=1e-6)


def test_window_augmentation_changes_sim_and_real_alike():
    real = torch.rand(4, 3, 6, 8) * 2 - 1
    gen = torch.Generator().manual_seed(0)
    r, s, valid = augment_window(real, real.clone(), 1.0, 0.0, gen)
    assert not valid and torch.equal(r, real.flip(-1)) and torch.equal(r, s)
    r, s, valid = augment_window(real, real.clone(), 0.0, 1.0, gen)
    assert valid and torch.equal(r, s) and not torch.allclose(r, real)
    r, s, valid = augment_window(real, real * 0.5, 0.0, 0.0, gen)
    assert valid and torch.equal(r, real) and torch.equal(s, real * 0.5)


def test_dataset_marks_mirrored_windows_and_training_runs(tmp_path):
    pair = synthetic_pair(12, 20, 20, seed=0)
    plain = ClipDataset([pair], tiny_config())
    assert all(plain[i]['actions_valid'] == 1 for i in range(len(plain)))
    mirrored = ClipDataset([pair], tiny_config(augment_mirror=1.0))
    item = mirrored[0]
    assert item['actions_valid'] == 0
    assert torch.allclose(item['real'], plain[0]['real'].flip(-1))
    res = train(tiny_config(augment_mirror=0.5, augment_hue=0.5), [pair], tmp_path / 'ck',
                steps=6, log=lambda m: None)
    assert res.steps == 6 and math.isfinite(res.last_loss)


def test_augmentation_shares_are_checked():
    with pytest.raises(ConfigError, match='augment_hue'):
        tiny_config(augment_hue=1.5)
