"""The training corruption and the samplers agree (an exact oracle is sampled back to its clip),
and a tiny model overfits one clip: the loss falls >= 10x and samples resemble the real clip."""

import numpy as np
import pytest
import torch
from ns_helpers import one_thread, tiny_config  # noqa: F401

from comsim_neural_sim.data import synthetic_pair
from comsim_neural_sim.sampling.guidance import GuidanceWeights
from comsim_neural_sim.sampling.pipeline import NeuralSimPipeline, new_pipeline
from comsim_neural_sim.schedulers import corrupt
from comsim_neural_sim.training import train


class Oracle(torch.nn.Module):
    """Knows the clean clip, so it returns the exact target for any noisy input and timestep."""

    def __init__(self, x0: torch.Tensor, prediction: str, alphas_cumprod: torch.Tensor,
                 n: int) -> None:
        super().__init__()
        self.x0, self.prediction, self.ac, self.n = x0, prediction, alphas_cumprod, n
        self.dummy = torch.nn.Parameter(torch.zeros(1))

    def target(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        b = x.shape[0]
        x0 = self.x0.expand_as(x)
        if self.prediction == 'flow':
            s = (t.float() / self.n).view(b, 1, 1, 1, 1)
            return (x - x0) / s                       # velocity noise - x0
        if self.prediction == 'sample':
            return x0                                 # the clean clip itself
        ac = self.ac[t.round().long()].view(b, 1, 1, 1, 1)
        return (x - ac.sqrt() * x0) / (1 - ac).sqrt()  # epsilon

    def forward(self, sample, timestep, *args, **kwargs):
        class Out:
            pass
        out = Out()
        out.sample = self.target(sample, timestep.reshape(-1).expand(sample.shape[0]))
        return out


@pytest.mark.parametrize('prediction', ['sample', 'epsilon', 'flow'])
def test_corruption_and_sampler_agree(prediction):
    cfg = tiny_config(prediction=prediction)
    pipe = new_pipeline(cfg)
    g = torch.Generator().manual_seed(0)
    x0 = torch.rand(1, cfg.frames, 3, cfg.height, cfg.width, generator=g) * 2 - 1
    ac = getattr(pipe.scheduler, 'alphas_cumprod', torch.zeros(cfg.num_train_timesteps))
    oracle = Oracle(x0, prediction, ac, cfg.num_train_timesteps)
    # the training target is what the oracle returns at the training timestep ...
    noise = torch.randn(x0.expand(3, -1, -1, -1, -1).shape, generator=g)
    noisy, t, target = corrupt(pipe.scheduler, x0.expand(3, -1, -1, -1, -1), noise, g)
    keep = (t > 5) if prediction == 'flow' else torch.ones(3, dtype=torch.bool)
    torch.testing.assert_close(oracle.target(noisy, t)[keep], target[keep], atol=2e-3, rtol=1e-3)
    # ... and the sampler, given that oracle, walks from noise back to the clip
    pipe.transformer = oracle
    sim = torch.zeros_like(x0)
    act = torch.zeros(1, cfg.frames, cfg.action_dim)
    out = pipe.sample_window(sim, act, GuidanceWeights(1.0, 0.0), 'action', 8, g)
    assert float((out - x0).abs().max()) < 1e-2


def test_tiny_model_overfits_one_clip(tmp_path):
    cfg = tiny_config(p_drop_action=0.0, p_drop_sim=0.0, p_drop_context=0.0, lr=3e-3,
                      log_every=30, ema_decay=0.99)
    clip = synthetic_pair(4, 16, 16, seed=1)
    res = train(cfg, [clip], tmp_path, steps=300, log=lambda s: None)
    assert res.first_loss / res.last_loss >= 10, (res.first_loss, res.last_loss)
    pipe = NeuralSimPipeline.from_pretrained(tmp_path, device='cpu')
    out = pipe(clip.sim, clip.actions, steps=10, seed=0, mode='joint')
    err = lambda a, b: float(np.abs(a.astype(float) - b.astype(float)).mean())  # noqa: E731
    gen_err, sim_err = err(out, clip.real), err(clip.sim, clip.real)
    assert gen_err < 0.6 * sim_err, (gen_err, sim_err)
