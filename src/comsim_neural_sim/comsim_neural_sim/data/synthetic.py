"""Synthetic paired clips whose real frames follow from the actions and the sim frames.

A square moves where the first two action dimensions put it, its size follows the last one
(the "gripper"). The sim clip draws it flat on grey; the real clip is the same scene with a
textured background, a shaded square, a colour cast and sensor noise. A model has to learn
both the appearance mapping (sim -> real) and the motion (action -> position) to fit it.
"""

from __future__ import annotations

import numpy as np

from .clips import PairedClip


def _smooth_actions(rng: np.random.Generator, frames: int, action_dim: int) -> np.ndarray:
    knots = rng.uniform(-1, 1, size=(max(2, frames // 4 + 2), action_dim))
    t = np.linspace(0, len(knots) - 1, frames)
    i = np.minimum(t.astype(int), len(knots) - 2)
    u = (t - i)[:, None]
    u = u * u * (3 - 2 * u)
    return ((1 - u) * knots[i] + u * knots[i + 1]).astype(np.float32)


def render_pair(actions: np.ndarray, height: int, width: int, noise: float = 0.03,
                rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(real, sim) uint8 clips (T, H, W, 3) for the given (T, A) actions (values in [-1, 1])."""
    rng = rng or np.random.default_rng(0)
    t_len = len(actions)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    texture = 0.5 + 0.25 * np.sin(xx * 0.9) * np.cos(yy * 0.7) + 0.15 * (yy / height)
    real_bg = np.stack([texture * 0.55, texture * 0.45, texture * 0.35], axis=-1)
    sim = np.full((t_len, height, width, 3), 0.5, dtype=np.float32)
    real = np.broadcast_to(real_bg, (t_len, height, width, 3)).copy()
    for k, a in enumerate(actions):
        size = 0.18 + 0.08 * float(np.clip(a[-1], -1, 1))
        half_h, half_w = size * height / 2, size * width / 2
        cy = (0.5 + 0.3 * float(np.clip(a[1], -1, 1))) * height
        cx = (0.5 + 0.3 * float(np.clip(a[0], -1, 1))) * width
        inside = (np.abs(yy - cy) <= half_h) & (np.abs(xx - cx) <= half_w)
        sim[k][inside] = (0.9, 0.1, 0.1)
        shade = 0.75 + 0.25 * (1 - (yy - cy + half_h) / max(2 * half_h, 1))
        real[k][inside] = np.stack([0.95 * shade, 0.35 * shade, 0.15 * shade], -1)[inside]
    real = real + rng.normal(0, noise, real.shape).astype(np.float32)
    to8 = lambda x: (np.clip(x, 0, 1) * 255).round().astype(np.uint8)  # noqa: E731
    return to8(real), to8(sim)


def synthetic_pair(frames: int, height: int, width: int, action_dim: int = 7, seed: int = 0,
                   noise: float = 0.03) -> PairedClip:
    """One synthetic paired episode (deterministic given ``seed``)."""
    if action_dim < 2:
        raise ValueError('synthetic clips need action_dim >= 2 (x and y of the square)')
    rng = np.random.default_rng(seed)
    actions = _smooth_actions(rng, frames, action_dim)
    real, sim = render_pair(actions, height, width, noise, rng)
    return PairedClip(real=real, sim=sim, actions=actions, name=f'synthetic_{seed}')
