"""Optional latent space: a diffusers ``AutoencoderKL`` loaded from a local directory.

Latent space makes 240x320 clips affordable (8x fewer pixels per side); pixel space needs no
pretrained weights, which is why it is the default.
"""

from __future__ import annotations

from pathlib import Path

import torch
from diffusers import AutoencoderKL

from ..errors import AutoencoderNotFoundError, InputShapeError


class LatentCodec:
    """Frames in [-1, 1] (N, 3, H, W) <-> scaled latents (N, C, H/8, W/8), in chunks."""

    def __init__(self, vae: AutoencoderKL, chunk: int = 16) -> None:
        self.vae = vae.eval().requires_grad_(False)
        self.chunk = chunk
        self.scale = float(getattr(vae.config, 'scaling_factor', 1.0) or 1.0)
        self.downsample = 2 ** (len(vae.config.block_out_channels) - 1)
        self.channels = int(vae.config.latent_channels)

    @classmethod
    def from_pretrained(cls, path: str | Path | None, **kwargs: object) -> LatentCodec:
        """Load ``path`` (a diffusers AutoencoderKL folder, or its ``vae/`` subfolder)."""
        if not path:
            raise AutoencoderNotFoundError('space is latent but autoencoder_path is not set; set '
                                           'it to a local diffusers AutoencoderKL directory or '
                                           'use space: pixel')
        p = Path(path)
        if (p / 'vae' / 'config.json').is_file():
            p = p / 'vae'
        if not (p / 'config.json').is_file():
            raise AutoencoderNotFoundError(f'no diffusers AutoencoderKL at {path} (expected '
                                           f'{p / "config.json"}); nothing is downloaded')
        return cls(AutoencoderKL.from_pretrained(p, **kwargs))

    @property
    def device(self) -> torch.device:
        return next(self.vae.parameters()).device

    @torch.no_grad()
    def encode(self, frames: torch.Tensor) -> torch.Tensor:
        """Mean latents (deterministic), scaled to roughly unit variance."""
        if frames.ndim != 4 or frames.shape[1] != 3:
            raise InputShapeError(f'expected (N, 3, H, W) frames, got {tuple(frames.shape)}')
        dt = self.vae.dtype
        outs = [self.vae.encode(c.to(self.device, dt)).latent_dist.mode()
                for c in frames.split(self.chunk)]
        return torch.cat(outs).float() * self.scale

    @torch.no_grad()
    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        dt = self.vae.dtype
        outs = [self.vae.decode(c.to(self.device, dt) / self.scale).sample
                for c in latents.split(self.chunk)]
        return torch.cat(outs).float().clamp(-1, 1)
