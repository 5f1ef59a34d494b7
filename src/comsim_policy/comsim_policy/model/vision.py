"""Image encoder: ResNet-18 layout, GroupNorm instead of BatchNorm, spatial-softmax keypoints.

GroupNorm because EMA weights and small per-GPU batches make BatchNorm statistics unreliable
(Chi et al. 2023); spatial softmax keeps *where* features are, which matters for manipulation
more than global pooling does. ``width`` scales every stage so a CPU model can be tiny.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

from .unet1d import _groups


def _norm(channels: int) -> nn.GroupNorm:
    return nn.GroupNorm(_groups(channels, max(1, channels // 16)), channels)


class BasicBlock(nn.Module):
    """ResNet basic block (two 3x3 convs) with GroupNorm."""

    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.norm1 = _norm(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.norm2 = _norm(c_out)
        self.down = None
        if stride != 1 or c_in != c_out:
            self.down = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False),
                                      _norm(c_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.norm1(self.conv1(x)))
        h = self.norm2(self.conv2(h))
        return F.relu(h + (x if self.down is None else self.down(x)))


class SpatialSoftmax(nn.Module):
    """Feature map (B, C, H, W) -> expected (x, y) of ``num_keypoints`` heat maps (B, 2K)."""

    def __init__(self, channels: int, num_keypoints: int) -> None:
        super().__init__()
        self.proj = nn.Conv2d(channels, num_keypoints, 1)

    def forward(self, feat: torch.Tensor) -> torch.Tensor:
        b, _, h, w = feat.shape
        logits = self.proj(feat).flatten(2)  # (B, K, H*W)
        attn = logits.softmax(dim=-1)
        ys = torch.linspace(-1, 1, h, device=feat.device, dtype=feat.dtype)
        xs = torch.linspace(-1, 1, w, device=feat.device, dtype=feat.dtype)
        gy, gx = torch.meshgrid(ys, xs, indexing='ij')
        ex = (attn * gx.reshape(1, 1, -1)).sum(-1)
        ey = (attn * gy.reshape(1, 1, -1)).sum(-1)
        return torch.cat([ex, ey], dim=-1).reshape(b, -1)


class ResNetEncoder(nn.Module):
    """ResNet-18 (2-2-2-2 basic blocks) -> spatial softmax -> linear, on images normalised by
    the policy's ``ImagePreprocessor``.

    ``stages`` keeps the first 1-4 ResNet stages: each one dropped doubles the resolution of
    the map the keypoints are read from (96x128 input: 3x4 with all four, 6x8 with three).
    ``head_relu`` puts a ReLU after the linear (the original ComSim head; see
    ``ModelConfig.encoder_head_relu``).
    """

    def __init__(self, width: int = 64, num_keypoints: int = 32, out_dim: int | None = None,
                 head_relu: bool = False, stages: int = 4) -> None:
        super().__init__()
        if not 1 <= stages <= 4:
            raise ValueError(f'ResNetEncoder: stages must be 1-4, got {stages}')
        w = width
        self.stem = nn.Sequential(nn.Conv2d(3, w, 7, 2, 3, bias=False), _norm(w), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        blocks = []
        c_in = w
        for i, c_out in enumerate([w, 2 * w, 4 * w, 8 * w][:stages]):
            stride = 1 if i == 0 else 2
            blocks += [BasicBlock(c_in, c_out, stride), BasicBlock(c_out, c_out, 1)]
            c_in = c_out
        self.stages = nn.Sequential(*blocks)
        self.pool = SpatialSoftmax(c_in, num_keypoints)
        self.out_dim = out_dim or 2 * num_keypoints
        self.head = nn.Sequential(nn.Linear(2 * num_keypoints, self.out_dim),
                                  nn.ReLU() if head_relu else nn.Identity())

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """(B, 3, H, W) normalised float -> (B, out_dim)."""
        return self.head(self.pool(self.stages(self.stem(images))))
