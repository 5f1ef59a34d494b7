"""DDPM training / DDIM sampling loop on a tiny 1-D UNet."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from comsim_policy.config import SchedulerConfig
from comsim_policy.model.unet1d import ConditionalUnet1D
from comsim_policy.schedulers import inference_scheduler, train_scheduler


@pytest.fixture(autouse=True)
def one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.mark.parametrize('down_dims', [[16], [16, 32], [16, 32, 64]])
def test_noise_prediction_shapes(down_dims):
    net = ConditionalUnet1D(action_dim=7, cond_dim=10, down_dims=down_dims, kernel_size=3,
                            n_groups=4, step_embed_dim=8)
    x = torch.randn(3, 16, 7)
    out = net(x, torch.tensor([0, 50, 99]), torch.randn(3, 10))
    assert out.shape == x.shape
    assert net(x, 5, torch.randn(3, 10)).shape == x.shape   # scalar step broadcasts


def test_condition_changes_the_prediction():
    torch.manual_seed(0)
    net = ConditionalUnet1D(2, 4, [16, 32], 3, 4, 8)
    x = torch.randn(1, 8, 2)
    a = net(x, 3, torch.zeros(1, 4))
    b = net(x, 3, torch.ones(1, 4))
    assert (a - b).abs().max() > 1e-4


def test_ddim_few_steps_denoises_a_trained_signal():
    """Train eps-prediction on one 1-D signal; DDIM (5 steps) from noise must return it."""
    torch.manual_seed(0)
    cfg = SchedulerConfig(num_train_timesteps=100, num_inference_steps=5)
    signal = torch.sin(torch.linspace(0, 2 * np.pi, 16)).reshape(1, 16, 1) * 0.8
    net = ConditionalUnet1D(1, 0, [16, 32], 3, 4, 16)
    ddpm = train_scheduler(cfg)
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)

    def sample(steps: int) -> torch.Tensor:
        sched = inference_scheduler(cfg, steps)
        x = torch.randn(8, 16, 1, generator=torch.Generator().manual_seed(1))
        with torch.no_grad():
            for t in sched.timesteps:
                x = sched.step(net(x, t), t, x).prev_sample
        return x

    untrained = (sample(5) - signal).abs().mean()
    for _ in range(300):
        x0 = signal.expand(32, -1, -1)
        noise = torch.randn_like(x0)
        t = torch.randint(0, 100, (32,))
        loss = torch.nn.functional.mse_loss(net(ddpm.add_noise(x0, noise, t), t), noise)
        opt.zero_grad()
        loss.backward()
        opt.step()
    err = (sample(5) - signal).abs().mean()
    assert err < 0.1, err
    assert err < 0.2 * untrained
    assert len(inference_scheduler(cfg).timesteps) == 5
