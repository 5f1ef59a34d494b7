"""``DiffusionPolicyModel``: observation encoder + conditional UNet + normalisers.

Training: actions are noised by the DDPM scheduler and the UNet predicts the noise, conditioned
on the encoded observation window. Sampling: start from Gaussian noise and denoise with any
diffusers scheduler (DDIM at deploy time). Images arrive resized and cropped by the model's
``ImagePreprocessor``, which also scales and normalises them here (it is saved with the weights).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

from ..config import PolicyConfig
from ..normalizer import PolicyNormalizer
from ..preprocessing import ImagePreprocessor
from .unet1d import ConditionalUnet1D
from .vision import ResNetEncoder


class DiffusionPolicyModel(nn.Module):
    """Batch layout: images {camera_key: (B, T_obs, 3, H, W) uint8}, state (B, T_obs, J),
    action (B, horizon, J); states and actions unnormalised (joint units)."""

    def __init__(self, config: PolicyConfig, preprocessor: ImagePreprocessor | None = None
                 ) -> None:
        super().__init__()
        self.config = config
        self.preprocessor = preprocessor or ImagePreprocessor.from_config(config)
        m = config.model
        keys = config.camera_keys
        def encoder() -> ResNetEncoder:
            return ResNetEncoder(m.vision_width, m.num_keypoints, head_relu=m.encoder_head_relu,
                                 stages=m.vision_stages)

        if m.share_vision_encoder:
            shared = encoder()
            self.encoders = nn.ModuleDict({k: shared for k in keys})
        else:
            self.encoders = nn.ModuleDict({k: encoder() for k in keys})
        self.state_steps = config.n_obs_steps if m.state_steps is None else m.state_steps
        cond = (sum(self.encoders[k].out_dim for k in keys) * config.n_obs_steps
                + config.state_dim * self.state_steps)
        self.unet = ConditionalUnet1D(config.action_dim, cond, m.down_dims,
                                      m.kernel_size, m.n_groups, m.diffusion_step_embed_dim)
        self.normalizer = PolicyNormalizer(config.state_dim, config.action_dim)

    def encode(self, images: dict[str, torch.Tensor], state: torch.Tensor,
               memory_format: torch.memory_format | None = None) -> torch.Tensor:
        """Observation window -> one conditioning vector per sample: every step's image
        features, then the latest ``state_steps`` joint states.

        The encoders see NHWC (channels-last) images on a CPU unless ``memory_format`` says
        otherwise: same values, and PyTorch's NCHW max-pool is ~15x slower there (one training
        step of the main-job config: 124 -> 114 ms).
        """
        b, t = state.shape[:2]
        parts = []
        for key in self.config.camera_keys:
            img = images[key]
            x = self.preprocessor.normalise(img.reshape(b * t, *img.shape[2:]))
            fmt = memory_format or (torch.channels_last if x.device.type == 'cpu'
                                    else torch.contiguous_format)
            x = x.contiguous(memory_format=fmt)
            parts.append(self.encoders[key](x).reshape(b, t, -1))
        states = self.normalizer.state.normalize(state.float())
        if self.state_steps == t:          # the original layout: per step, images then state
            return torch.cat([*parts, states], dim=-1).reshape(b, -1)
        recent = states[:, t - self.state_steps:].reshape(b, -1)
        return torch.cat([torch.cat(parts, dim=-1).reshape(b, -1), recent], dim=-1)

    def compute_loss(self, batch: dict, noise_scheduler) -> torch.Tensor:
        """DDPM epsilon-prediction MSE on one batch."""
        cond = self.encode(batch['images'], batch['state'])
        actions = self.normalizer.action.normalize(batch['action'].float())
        noise = torch.randn_like(actions)
        steps = torch.randint(0, noise_scheduler.config.num_train_timesteps,
                              (actions.shape[0],), device=actions.device)
        noisy = noise_scheduler.add_noise(actions, noise, steps)
        pred = self.unet(noisy, steps, cond)
        target = noise
        if noise_scheduler.config.prediction_type == 'sample':
            target = actions
        return F.mse_loss(pred, target)

    @torch.no_grad()
    def sample(self, images: dict[str, torch.Tensor], state: torch.Tensor, scheduler,
               generator: torch.Generator | None = None) -> torch.Tensor:
        """Denoise an action sequence (B, horizon, J), unnormalised; timesteps must be set."""
        cond = self.encode(images, state)
        shape = (state.shape[0], self.config.horizon, self.config.action_dim)
        x = torch.randn(shape, generator=generator, device=generator.device
                        if generator is not None else state.device).to(state.device)
        for t in scheduler.timesteps:
            eps = self.unet(x, t.to(x.device), cond)
            x = scheduler.step(eps, t, x, generator=generator).prev_sample
        return self.normalizer.action.unnormalize(x)
