"""Exponential moving average of model weights (what gets deployed, per Chi et al.)."""

from __future__ import annotations

import copy

import torch
from torch import nn


class EMA:
    """``ema.model`` tracks ``decay``-averaged weights; decay ramps up from 0 (warm-up)."""

    def __init__(self, model: nn.Module, decay: float = 0.995, warmup_steps: int = 50) -> None:
        self.model = copy.deepcopy(model).eval().requires_grad_(False)
        self.decay = decay
        self.warmup_steps = warmup_steps

    def current_decay(self, step: int) -> float:
        """Short memory early (weights move fast), ``decay`` once past warm-up."""
        return min(self.decay, (1 + step) / (1 + step + self.warmup_steps))

    @torch.no_grad()
    def update(self, model: nn.Module, step: int) -> None:
        d = self.current_decay(step)
        for e, p in zip(self.model.parameters(), model.parameters(), strict=True):
            e.lerp_(p.detach(), 1.0 - d)
        for e, b in zip(self.model.buffers(), model.buffers(), strict=True):
            e.copy_(b)
