"""Shared helpers of the neural-sim tests: a tiny config and randomised (non-zero) weights."""

from __future__ import annotations

import pytest
import torch

from comsim_neural_sim.config import NeuralSimConfig


def tiny_config(**kw) -> NeuralSimConfig:
    base = dict(frames=4, context_frames=1, height=16, width=16, width_dim=32, depth=2, heads=2,
                patch_size=4, action_dim=7, batch_size=4, log_every=10, sample_every=10**6,
                save_every=10**6, lr=2e-3, ema_decay=0.99, cameras=['front', 'side'])
    base.update(kw)
    return NeuralSimConfig(**base)


def randomise(model: torch.nn.Module, seed: int = 0, scale: float = 0.05) -> torch.nn.Module:
    """Perturb every weight so zero-initialised output layers do not make outputs trivial."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=g) * scale)
    return model


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny models run far faster single-threaded on a shared 2-core box; restored after."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
