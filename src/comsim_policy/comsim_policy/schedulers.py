"""diffusers noise schedulers: DDPM to train (noise-adding), DDIM to sample in few steps.

Both are built from the same ``SchedulerConfig`` so their beta schedules agree; the model
never imports them (diffusers' split of models, schedulers and pipelines).
"""

from __future__ import annotations

from diffusers import DDIMScheduler, DDPMScheduler

from .config import SchedulerConfig


def train_scheduler(cfg: SchedulerConfig) -> DDPMScheduler:
    """The DDPM scheduler whose ``add_noise`` defines the training targets."""
    return DDPMScheduler(num_train_timesteps=cfg.num_train_timesteps,
                         beta_schedule=cfg.beta_schedule, clip_sample=cfg.clip_sample,
                         prediction_type=cfg.prediction_type)


def inference_scheduler(cfg: SchedulerConfig, num_steps: int | None = None) -> DDIMScheduler:
    """DDIM over the same betas, ``num_steps`` (default ``cfg.num_inference_steps``) set."""
    sched = DDIMScheduler(num_train_timesteps=cfg.num_train_timesteps,
                          beta_schedule=cfg.beta_schedule, clip_sample=cfg.clip_sample,
                          prediction_type=cfg.prediction_type, set_alpha_to_one=True,
                          steps_offset=0)
    sched.set_timesteps(num_steps or cfg.num_inference_steps)
    return sched
