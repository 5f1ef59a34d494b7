"""Augmentations applied to a paired window, the sim and the real frames alike.

The pairs are a few demonstrations in one region with one set of object colours; the
translations are asked for layouts and colours those pairs never show. Each augmentation
states a prior about the lab's look that lets the network use what it learned elsewhere:

- ``mirror``: the lab's look of an object does not depend on which side of the image it lies
  (the window is mirrored left-right; its actions, which describe the unmirrored motion, are
  dropped for that sample).
- ``hue``: the lab renders a hue it never showed as it renders the hues it did, turned alike
  (both clips' colours are rotated about the grey axis by one random angle; greys stay grey).
"""

from __future__ import annotations

import math

import torch

_GREY = torch.tensor([1.0, 1.0, 1.0]) / math.sqrt(3.0)


def hue_rotation(angle: float) -> torch.Tensor:
    """(3, 3) rotation of RGB about the grey axis by ``angle`` radians (Rodrigues)."""
    k = _GREY
    cross = torch.tensor([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return (math.cos(angle) * torch.eye(3) + math.sin(angle) * cross
            + (1 - math.cos(angle)) * torch.outer(k, k))


def rotate_hue(clip: torch.Tensor, rotation: torch.Tensor) -> torch.Tensor:
    """(T, 3, H, W) frames in [-1, 1] (mid grey at 0) turned by a (3, 3) rotation."""
    return torch.einsum('ij,tjhw->tihw', rotation, clip).clamp(-1, 1)


def augment_window(real: torch.Tensor, sim: torch.Tensor, p_mirror: float, p_hue: float,
                   generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, bool]:
    """-> (real, sim, actions still describe the frames). Pixel-space (T, 3, H, W) clips."""
    u = torch.rand(3, generator=generator)
    actions_valid = True
    if u[0] < p_mirror:
        real, sim = real.flip(-1), sim.flip(-1)
        actions_valid = False
    if u[1] < p_hue:
        rot = hue_rotation(float(u[2]) * 2 * math.pi)
        real, sim = rotate_hue(real, rot), rotate_hue(sim, rot)
    return real, sim, actions_valid
