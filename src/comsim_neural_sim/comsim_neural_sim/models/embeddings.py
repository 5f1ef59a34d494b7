"""Fixed sin-cos position tables and the per-frame action encoder."""

from __future__ import annotations

import math

import torch
from torch import nn


def sincos_1d(positions: torch.Tensor, dim: int) -> torch.Tensor:
    """(N,) positions -> (N, dim) sin/cos table (dim even), as in the original transformer."""
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float64) / half)
    ang = positions.to(torch.float64)[:, None] * freqs[None]
    return torch.cat([ang.sin(), ang.cos()], dim=1).float()


def sincos_3d(frames: int, height: int, width: int, dim: int) -> torch.Tensor:
    """(frames*height*width, dim) table: a quarter of channels for time, the rest for space.

    Frame-major token order (t, y, x), matching how the transformer flattens patches.
    """
    dt = (dim // 4) // 2 * 2
    dy = ((dim - dt) // 2) // 2 * 2
    dx = dim - dt - dy
    t = sincos_1d(torch.arange(frames), dt)[:, None, None].expand(frames, height, width, dt)
    y = sincos_1d(torch.arange(height), dy)[None, :, None].expand(frames, height, width, dy)
    x = sincos_1d(torch.arange(width), dx)[None, None, :].expand(frames, height, width, dx)
    return torch.cat([t, y, x], dim=-1).reshape(frames * height * width, dim)


class ActionEncoder(nn.Module):
    """Per-frame actions (B, F', k*A) -> tokens (B, F', D); a learned null token when dropped.

    A learned null (rather than zeros) lets the network tell "no action given" apart from "the
    action is zero", which is what classifier-free guidance needs for its unconditional score.
    """

    def __init__(self, in_dim: int, dim: int, frames: int) -> None:
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(in_dim, dim), nn.SiLU(), nn.Linear(dim, dim))
        self.null = nn.Parameter(torch.randn(dim) * 0.02)
        self.register_buffer('pos', sincos_1d(torch.arange(frames), dim), persistent=False)

    def forward(self, actions: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        emb = self.mlp(actions)
        k = keep.to(emb.dtype).view(-1, 1, 1)
        emb = k * emb + (1 - k) * self.null.to(emb.dtype)
        return emb + self.pos.to(emb.dtype)[None]
