"""Compositional guidance over the four scores one network learned (Du et al., composable
diffusion): ``eps = eps_u + w_a (eps_action - eps_u) + w_v (eps_sim - eps_u)``.

All needed conditionings are stacked on the batch axis and evaluated in ONE forward pass;
a branch whose coefficient is zero (e.g. the unconditional one when w_a + w_v = 1) is skipped.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..errors import NeuralSimError

MODES = ('composed', 'joint', 'action', 'sim', 'uncond')
# branch name -> (sim_keep, action_keep)
BRANCHES = {'uncond': (0.0, 0.0), 'action': (0.0, 1.0), 'sim': (1.0, 0.0), 'joint': (1.0, 1.0)}


@dataclass(frozen=True)
class GuidanceWeights:
    """``w_action``/``w_sim`` weight the control/visual scores; ``w_joint`` the joint score."""

    w_action: float = 1.0
    w_sim: float = 1.0
    w_joint: float = 1.0

    def coefficients(self, mode: str) -> dict[str, float]:
        """Branch -> coefficient, so that the guided prediction is ``sum(c_i * eps_i)``."""
        if mode == 'composed':
            c = {'uncond': 1.0 - self.w_action - self.w_sim, 'action': self.w_action,
                 'sim': self.w_sim}
        elif mode == 'joint':
            c = {'uncond': 1.0 - self.w_joint, 'joint': self.w_joint}
        elif mode == 'action':
            c = {'uncond': 1.0 - self.w_action, 'action': self.w_action}
        elif mode == 'sim':
            c = {'uncond': 1.0 - self.w_sim, 'sim': self.w_sim}
        elif mode == 'uncond':
            c = {'uncond': 1.0}
        else:
            raise NeuralSimError(f'unknown guidance mode {mode!r}; one of {MODES}')
        return {k: v for k, v in c.items() if v != 0.0} or {'uncond': 0.0}


def compose_scores(eps_uncond: torch.Tensor, eps_action: torch.Tensor, eps_sim: torch.Tensor,
                   w_action: float, w_sim: float) -> torch.Tensor:
    """The compositional formula, literally (reference for tests and for callers)."""
    return eps_uncond + w_action * (eps_action - eps_uncond) + w_sim * (eps_sim - eps_uncond)


def compose_joint(eps_uncond: torch.Tensor, eps_joint: torch.Tensor, w: float) -> torch.Tensor:
    """Classifier-free guidance on the joint condition."""
    return eps_uncond + w * (eps_joint - eps_uncond)


def guided_prediction(model: torch.nn.Module, sample: torch.Tensor, timestep: torch.Tensor,
                      sim: torch.Tensor, actions: torch.Tensor, weights: GuidanceWeights,
                      mode: str = 'composed', context: torch.Tensor | None = None,
                      context_mask: torch.Tensor | None = None,
                      camera: torch.Tensor | None = None) -> torch.Tensor:
    """Guided noise/velocity prediction for a batch of B clips in one batched forward."""
    coefs = weights.coefficients(mode)
    names = list(coefs)
    k, b = len(names), sample.shape[0]
    rep = lambda x: None if x is None else x.repeat(k, *([1] * (x.ndim - 1)))  # noqa: E731
    keep = torch.tensor([BRANCHES[n] for n in names], dtype=sample.dtype, device=sample.device)
    keep = keep.repeat_interleave(b, dim=0)
    t = timestep.reshape(-1).to(sample.device)
    t = (t.expand(b) if t.numel() == 1 else t).repeat(k)
    out = model(rep(sample), t, rep(sim), rep(actions), sim_keep=keep[:, 0],
                action_keep=keep[:, 1], context=rep(context), context_mask=rep(context_mask),
                camera=rep(camera)).sample
    parts = out.split(b, dim=0)
    result = coefs[names[0]] * parts[0]
    for name, part in zip(names[1:], parts[1:]):
        result = result + coefs[name] * part
    return result
