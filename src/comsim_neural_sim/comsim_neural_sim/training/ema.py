"""Exponential moving average of the weights (with the usual warm-up), sampled and saved."""

from __future__ import annotations

import copy

import torch
from torch import nn


class EMA:
    """``decay_t = min(decay, (1 + t) / (10 + t))`` so early averages are not stuck at init."""

    def __init__(self, model: nn.Module, decay: float = 0.999) -> None:
        self.model = copy.deepcopy(model).eval().requires_grad_(False)
        self.decay = decay
        self.step = 0

    @torch.no_grad()
    def update(self, model: nn.Module) -> None:
        self.step += 1
        d = min(self.decay, (1 + self.step) / (10 + self.step))
        for e, p in zip(self.model.parameters(), model.parameters()):
            e.lerp_(p.detach().to(e.dtype), 1 - d)
