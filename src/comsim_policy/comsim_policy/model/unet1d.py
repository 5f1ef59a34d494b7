"""1-D temporal UNet with FiLM conditioning (the Diffusion Policy noise-prediction network).

Convolves over the action sequence (time is the 1-D axis, action dims are channels); the
diffusion step embedding and the observation features modulate every residual block through
FiLM (per-channel scale and bias), as in Chi et al. 2023.
"""

from __future__ import annotations

import math

import torch
from torch import nn


class SinusoidalPosEmb(nn.Module):
    """Transformer-style sinusoidal embedding of the (integer) diffusion step."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        half = self.dim // 2
        freq = torch.exp(torch.arange(half, device=t.device) * (-math.log(10000) / (half - 1)))
        arg = t.float()[:, None] * freq[None]
        return torch.cat([arg.sin(), arg.cos()], dim=-1)


class Conv1dBlock(nn.Module):
    """Conv1d -> GroupNorm -> Mish."""

    def __init__(self, c_in: int, c_out: int, kernel: int, n_groups: int) -> None:
        super().__init__()
        self.block = nn.Sequential(nn.Conv1d(c_in, c_out, kernel, padding=kernel // 2),
                                   nn.GroupNorm(_groups(c_out, n_groups), c_out), nn.Mish())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.block(x)


class FiLMResBlock(nn.Module):
    """Two conv blocks; the condition sets a per-channel scale and bias between them."""

    def __init__(self, c_in: int, c_out: int, cond_dim: int, kernel: int, n_groups: int) -> None:
        super().__init__()
        self.c_out = c_out
        self.block1 = Conv1dBlock(c_in, c_out, kernel, n_groups)
        self.block2 = Conv1dBlock(c_out, c_out, kernel, n_groups)
        self.film = nn.Sequential(nn.Mish(), nn.Linear(cond_dim, 2 * c_out))
        self.skip = nn.Conv1d(c_in, c_out, 1) if c_in != c_out else nn.Identity()

    def forward(self, x: torch.Tensor, cond: torch.Tensor) -> torch.Tensor:
        h = self.block1(x)
        scale, bias = self.film(cond).unsqueeze(-1).chunk(2, dim=1)
        h = self.block2(h * scale + bias)
        return h + self.skip(x)


class ConditionalUnet1D(nn.Module):
    """eps_theta(noisy actions (B, T, A), step (B,), cond (B, D)) -> (B, T, A)."""

    def __init__(self, action_dim: int, cond_dim: int, down_dims: list[int],
                 kernel_size: int = 5, n_groups: int = 8, step_embed_dim: int = 64) -> None:
        super().__init__()
        self.step_encoder = nn.Sequential(
            SinusoidalPosEmb(step_embed_dim), nn.Linear(step_embed_dim, 4 * step_embed_dim),
            nn.Mish(), nn.Linear(4 * step_embed_dim, step_embed_dim))
        cdim = step_embed_dim + cond_dim
        dims = [action_dim, *down_dims]
        pairs = list(zip(dims[:-1], dims[1:], strict=True))
        self.down = nn.ModuleList()
        for i, (c_in, c_out) in enumerate(pairs):
            last = i == len(pairs) - 1
            self.down.append(nn.ModuleList([
                FiLMResBlock(c_in, c_out, cdim, kernel_size, n_groups),
                FiLMResBlock(c_out, c_out, cdim, kernel_size, n_groups),
                nn.Conv1d(c_out, c_out, 3, 2, 1) if not last else nn.Identity()]))
        mid = down_dims[-1]
        self.mid = nn.ModuleList([FiLMResBlock(mid, mid, cdim, kernel_size, n_groups),
                                  FiLMResBlock(mid, mid, cdim, kernel_size, n_groups)])
        self.up = nn.ModuleList()
        for c_in, c_out in reversed(pairs[1:]):  # every up level undoes one downsampling
            self.up.append(nn.ModuleList([
                FiLMResBlock(c_out * 2, c_in, cdim, kernel_size, n_groups),
                FiLMResBlock(c_in, c_in, cdim, kernel_size, n_groups),
                nn.ConvTranspose1d(c_in, c_in, 4, 2, 1)]))
        self.final = nn.Sequential(Conv1dBlock(down_dims[0], down_dims[0], kernel_size, n_groups),
                                   nn.Conv1d(down_dims[0], action_dim, 1))

    def forward(self, sample: torch.Tensor, timestep: torch.Tensor | int,
                cond: torch.Tensor | None = None) -> torch.Tensor:
        x = sample.transpose(1, 2)  # (B, A, T)
        if not torch.is_tensor(timestep):
            timestep = torch.tensor([timestep], device=x.device)
        timestep = timestep.to(x.device).reshape(-1).expand(x.shape[0])
        c = self.step_encoder(timestep)
        if cond is not None:
            c = torch.cat([c, cond], dim=-1)
        skips = []
        for res1, res2, down in self.down:
            x = res2(res1(x, c), c)
            skips.append(x)
            x = down(x)
        for res in self.mid:
            x = res(x, c)
        for res1, res2, up in self.up:
            x = torch.cat([x, skips.pop()], dim=1)
            x = up(res2(res1(x, c), c))
        return self.final(x).transpose(1, 2)


def _groups(channels: int, n_groups: int) -> int:
    """Largest group count <= n_groups that divides channels (small test models)."""
    g = min(n_groups, channels)
    while channels % g:
        g -= 1
    return g
