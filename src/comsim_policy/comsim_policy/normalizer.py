"""Min/max normalisation of states and actions to [-1, 1]: the robot's joint limits, or the data.

The diffusion model works in [-1, 1] (DDPM clips samples there), so the range is part of the
policy: saved with the checkpoint and applied identically at inference. Whatever lies outside
it the policy can never output, which is why the default is the robot's joint limits
(``PolicyConfig.normalization``): min/max of demonstrations from one region forbids the joint
angles another region needs, whatever the images show.
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
    def from_range(cls, low, high) -> RangeNormalizer:
        """Stats from given bounds (the robot's joint limits), one per dimension."""
        low, high = np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
        if low.shape != high.shape or low.ndim != 1 or not np.all(high >= low):
            raise ValueError(f'bad range: low {low.tolist()}, high {high.tolist()}')
        norm = cls(low.shape[0])
        norm.min.copy_(torch.from_numpy(low).float())
        norm.max.copy_(torch.from_numpy(high).float())
        return norm

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


class ActionNormalizer(RangeNormalizer):
    """Actions: a dimension the training data never moved is output as that value.

    As an input (a state) such a dimension keeps a half-range of 0.5, so a value off it at
    inference stays a moderate number; as an output that half-range would turn the network's
    error in a dimension it had nothing to learn from into up to 0.5 of its unit (a joint the
    demonstrations never turned, commanded anywhere within 0.5 rad of where they held it)."""

    def unnormalize(self, y: torch.Tensor) -> torch.Tensor:
        center, half = self._scale()
        half = torch.where(self.max - self.min < EPS, torch.zeros_like(half), half)
        return y * half + center


class PolicyNormalizer(nn.Module):
    """State and action normalisers, kept together so they are saved together."""

    def __init__(self, state_dim: int, action_dim: int) -> None:
        super().__init__()
        self.state = RangeNormalizer(state_dim)
        self.action = ActionNormalizer(action_dim)

    @classmethod
    def fit(cls, states: np.ndarray, actions: np.ndarray) -> PolicyNormalizer:
        norm = cls(np.shape(states)[-1], np.shape(actions)[-1])
        norm.state = RangeNormalizer.fit(states)
        norm.action = ActionNormalizer.fit(actions)
        return norm

    @classmethod
    def from_limits(cls, low, high) -> PolicyNormalizer:
        """States and actions are both joint positions: both get the joint limits."""
        norm = cls(len(low), len(low))
        norm.state = RangeNormalizer.from_range(low, high)
        norm.action = ActionNormalizer.from_range(low, high)
        return norm


def joint_limits(joint_names: list[str], robot_model: str = '') -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) of ``joint_names`` on ``robot_model`` ('' = the ComSim arm)."""
    from comsim_core.robot.model import RobotModel  # noqa: PLC0415 - MuJoCo only for limits

    robot = RobotModel.load(robot_model or None)
    missing = [n for n in joint_names if n not in robot.joint_names]
    if missing:
        raise ValueError(f'joints {missing} are not in the robot model {robot.joint_names}')
    idx = [robot.joint_names.index(n) for n in joint_names]
    return robot.lower[idx], robot.upper[idx]
