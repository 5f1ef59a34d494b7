"""uint8 frame stacks <-> [-1, 1] tensors, with resizing to the model's resolution."""

from __future__ import annotations

import numpy as np
import torch
from torch.nn import functional as F

from ..errors import InputShapeError


def check_frames(frames: np.ndarray, name: str = 'frames') -> None:
    if not isinstance(frames, np.ndarray) or frames.ndim != 4 or frames.shape[-1] != 3:
        shape = getattr(frames, 'shape', None)
        raise InputShapeError(f'{name} must be a (T, H, W, 3) array, got shape {shape}')
    if frames.dtype != np.uint8:
        raise InputShapeError(f'{name} must be uint8 RGB, got {frames.dtype}')
    if frames.shape[0] == 0:
        raise InputShapeError(f'{name} is empty (T = 0)')


def resize_clip(x: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """Resize (N, C, H, W) float frames; antialiased when shrinking."""
    if tuple(x.shape[-2:]) == (height, width):
        return x
    shrink = height < x.shape[-2] or width < x.shape[-1]
    return F.interpolate(x, size=(height, width), mode='bilinear', align_corners=False,
                         antialias=shrink)


def frames_to_tensor(frames: np.ndarray, height: int, width: int) -> torch.Tensor:
    """(T, H, W, 3) uint8 -> (T, 3, height, width) float in [-1, 1]."""
    check_frames(frames)
    x = torch.from_numpy(np.ascontiguousarray(frames)).permute(0, 3, 1, 2).float() / 127.5 - 1
    return resize_clip(x, height, width).clamp(-1, 1)


def tensor_to_frames(x: torch.Tensor, height: int | None = None,
                     width: int | None = None) -> np.ndarray:
    """(T, 3, h, w) in [-1, 1] -> (T, height, width, 3) uint8."""
    x = x.detach().float().cpu()
    if height is not None and width is not None:
        x = resize_clip(x, height, width)
    x = ((x.clamp(-1, 1) + 1) * 127.5).round().to(torch.uint8)
    return x.permute(0, 2, 3, 1).numpy()


def keep_sim_detail(translated: np.ndarray, sim: np.ndarray, height: int, width: int
                    ) -> np.ndarray:
    """``translated`` (T, H, W, 3) uint8, upsampled from the model's ``height`` x ``width``,
    plus the sim frames' detail above that resolution (sim minus its own low-pass through the
    same resize): the model supplies the real look at its resolution, the sim keeps its edges,
    so a 3 px object the model cannot resolve stays where the sim has it."""
    check_frames(sim, 'sim')
    if translated.shape != sim.shape:
        raise InputShapeError(f'translated frames {translated.shape} and sim frames '
                              f'{sim.shape} differ in shape')
    s = torch.from_numpy(np.ascontiguousarray(sim)).permute(0, 3, 1, 2).float()
    low = resize_clip(resize_clip(s, height, width), *sim.shape[1:3])
    detail = (s - low).permute(0, 2, 3, 1).numpy()
    return np.clip(translated.astype(np.float32) + detail, 0, 255).round().astype(np.uint8)
