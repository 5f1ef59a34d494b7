"""One DiT block: per-frame adaLN-zero, spatio-temporal self-attention, cross-attention to the
action tokens, feed-forward. Built from diffusers' ``Attention`` and ``FeedForward``."""

from __future__ import annotations

import torch
from diffusers.models.attention import FeedForward
from diffusers.models.attention_processor import Attention
from torch import nn


class NeuralSimBlock(nn.Module):
    """Transformer block whose modulation varies per token (per frame), not per sample.

    Per-frame adaLN is how control dynamics reach every patch of the frame they belong to;
    cross-attention additionally lets a patch look at the whole action trajectory.
    """

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        head_dim = dim // heads
        self.norm1 = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.attn = Attention(dim, heads=heads, dim_head=head_dim, bias=True, qk_norm='layer_norm')
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.cross = Attention(dim, cross_attention_dim=dim, heads=heads, dim_head=head_dim,
                               bias=True, qk_norm='layer_norm')
        self.norm3 = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.ff = FeedForward(dim, mult=4, activation_fn='gelu-approximate')
        self.ada = nn.Linear(dim, 6 * dim)
        nn.init.zeros_(self.ada.weight)
        nn.init.zeros_(self.ada.bias)

    def forward(self, x: torch.Tensor, cond: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """x (B, N, D) tokens; cond (B, N, D) per-token conditioning; actions (B, F', D)."""
        sh1, sc1, g1, sh2, sc2, g2 = self.ada(nn.functional.silu(cond)).chunk(6, dim=-1)
        h = self.norm1(x) * (1 + sc1) + sh1
        x = x + g1 * self.attn(h)
        x = x + self.cross(self.norm2(x), encoder_hidden_states=actions)
        h = self.norm3(x) * (1 + sc2) + sh2
        return x + g2 * self.ff(h)
