"""Diffusers schedulers for the two prediction targets, and the matching training corruption.

``epsilon``: DDPM noising at train time, DDIM at sample time (few steps, deterministic).
``sample``: the same, the network predicting the clean clip (x0) instead of the noise. Guidance
composes x0 predictions exactly as it composes noise ones (they are affine in each other at a
given step), and a small, briefly trained network learns the lab's fixed look faster this way.
``flow``: rectified flow (x_t = (1 - s) x0 + s noise, target noise - x0), Euler at sample time.
"""

from __future__ import annotations

import torch
from diffusers import DDIMScheduler, FlowMatchEulerDiscreteScheduler

from .config import NeuralSimConfig

Scheduler = DDIMScheduler | FlowMatchEulerDiscreteScheduler


def make_scheduler(cfg: NeuralSimConfig) -> Scheduler:
    """The sampling scheduler for ``cfg.prediction``."""
    if cfg.prediction == 'flow':
        return FlowMatchEulerDiscreteScheduler(num_train_timesteps=cfg.num_train_timesteps,
                                               shift=1.0)
    return DDIMScheduler(num_train_timesteps=cfg.num_train_timesteps, beta_schedule='linear',
                         clip_sample=False, set_alpha_to_one=True, timestep_spacing='trailing',
                         prediction_type='sample' if cfg.prediction == 'sample' else 'epsilon')


def corrupt(scheduler: Scheduler, x0: torch.Tensor, noise: torch.Tensor,
            generator: torch.Generator | None = None
            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Noisy sample, timesteps (B,) and regression target for one training batch."""
    b = x0.shape[0]
    n = scheduler.config.num_train_timesteps
    if isinstance(scheduler, FlowMatchEulerDiscreteScheduler):
        sigma = torch.rand(b, generator=generator, device=generator.device if generator else None)
        sigma = sigma.to(x0.device)
        s = sigma.view(b, 1, 1, 1, 1).to(x0.dtype)
        return (1 - s) * x0 + s * noise, sigma * n, noise - x0
    t = torch.randint(0, n, (b,), generator=generator,
                      device=generator.device if generator else None).to(x0.device)
    ac = scheduler.alphas_cumprod.to(x0.device)[t].view(b, 1, 1, 1, 1).to(x0.dtype)
    target = x0 if scheduler.config.prediction_type == 'sample' else noise
    return ac.sqrt() * x0 + (1 - ac).sqrt() * noise, t.float(), target
