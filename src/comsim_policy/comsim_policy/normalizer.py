"""Min/max normalisation of states and actions to [-1, 1], fitted on training data only.

The diffusion model works in [-1, 1] (DDPM clips samples there), so the stats are part of
the policy: they are saved with the checkpoint and applied identically at inference.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

EPS = 1e-4


class RangeNormalizer(nn.Module):
    """x -> 2 (x - min) / (max - min) - 1 per dimension; constant dimensions map to 0."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.register_buffer('min', torch.zeros(dim))
        self.register_buffer('max', torch.ones(dim))

    @classmethod
    def fit(cls, data: np.ndarray) -> RangeNormalizer:
        """Stats from (N, dim) samples; raises ValueError on empty or non-finite data."""
        data = np.asarray(data, dtype=np.float64).reshape(-1, np.shape(data)[-1])
        if data.shape[0] == 0:
            raise ValueError('cannot fit a normaliser on zero samples')
        if not np.isfinite(data).all():
            raise ValueError('cannot fit a normaliser: data contains NaN or inf')
        norm = cls(data.shape[1])
        norm.min.copy_(torch.from_numpy(data.min(0)).float())
        norm.max.copy_(torch.from_numpy(data.max(0)).float())
        return norm

    def _scale(self) -> tuple[torch.Tensor, torch.Tensor]:
        span = self.max - self.min
        const = span < EPS
        span = torch.where(const, torch.ones_like(span), span)
        center = torch.where(const, self.min, (self.max + self.min) / 2)
        return center, span / 2

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        center, half = self._scale()
        return (x - center) / half

    def unnormalize(self, y: torch.Tensor) -> torch.Tensor:
        center, half = self._scale()
        return y * half + center


class PolicyNormalizer(nn.Module):
    """State and action normalisers, kept together so they are saved together."""

    def __init__(self, state_dim: int, action_dim: int) -> None:
        super().__init__()
        self.state = RangeNormalizer(state_dim)
        self.action = RangeNormalizer(action_dim)

    @classmethod
    def fit(cls, states: np.ndarray, actions: np.ndarray) -> PolicyNormalizer:
        norm = cls(np.shape(states)[-1], np.shape(actions)[-1])
        norm.state = RangeNormalizer.fit(states)
        norm.action = RangeNormalizer.fit(actions)
        return norm
