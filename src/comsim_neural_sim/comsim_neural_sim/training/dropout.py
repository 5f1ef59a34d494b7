"""Independent per-sample condition dropout, so one network learns all four scores.

With p_a and p_v the drop probabilities of the action and the sim clip, a batch holds
joint (1-p_a)(1-p_v), action-only (1-p_a)p_v, sim-only p_a(1-p_v) and unconditional p_a p_v
samples: exactly the scores compositional guidance combines at sampling time.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class ConditionMasks:
    """1 = condition given, 0 = dropped. ``context`` is (B, F): revealed context frames."""

    sim_keep: torch.Tensor
    action_keep: torch.Tensor
    context: torch.Tensor


def sample_condition_masks(batch: int, frames: int, context_frames: int, p_drop_action: float,
                           p_drop_sim: float, p_drop_context: float,
                           generator: torch.Generator | None = None) -> ConditionMasks:
    """Draw the keep flags for one batch (on the generator's device, CPU by default)."""
    u = torch.rand(batch, 3, generator=generator)
    ctx = torch.zeros(batch, frames)
    ctx[:, :context_frames] = (u[:, 2:3] >= p_drop_context).float()
    return ConditionMasks(sim_keep=(u[:, 1] >= p_drop_sim).float(),
                          action_keep=(u[:, 0] >= p_drop_action).float(), context=ctx)
