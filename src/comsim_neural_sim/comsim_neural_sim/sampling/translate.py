"""Several sim episodes' frames translated in one batched generation per camera: the part of
translation that needs only torch (the GPU path runs it on packed arrays, without rosbags)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..data.clips import normalise_actions
from ..data.frames import keep_sim_detail
from ..errors import InputShapeError
from .guidance import GuidanceWeights
from .pipeline import NeuralSimPipeline


@dataclass
class SimEpisode:
    """A sim episode in memory: per camera topic, header stamps (T,) and frames (T, H, W, 3),
    and the action in force at each frame (T, A)."""

    path: Path
    images: dict[str, tuple[np.ndarray, np.ndarray]]
    actions: dict[str, np.ndarray]
    sidecar: dict[str, Any]


def config_hash(pipe: NeuralSimPipeline) -> str:
    """Short hash of the checkpoint config (architecture and action statistics)."""
    text = json.dumps(pipe.config.to_dict(), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


SIM_MODES = ('composed', 'joint', 'sim')     # the guidance modes that see the sim video


def translate_frames(pipe: NeuralSimPipeline, eps: Sequence[SimEpisode], topic: str,
                     weights: dict[str, float], steps: int, seed: int, mode: str,
                     sim_detail: bool = False) -> list[np.ndarray]:
    """Translate one camera of several episodes in ONE batch (padded to the longest).

    ``sim_detail`` adds the sim frames' detail above the model's resolution (``keep_sim_detail``)
    in the modes that see the sim video; action-only and unconditional outputs stay as made.
    """
    outs = _translate_frames(pipe, eps, topic, weights, steps, seed, mode)
    if not (sim_detail and mode in SIM_MODES):
        return outs
    cfg = pipe.config
    return [keep_sim_detail(o, e.images[topic][1], cfg.height, cfg.width)
            for o, e in zip(outs, eps, strict=True)]


def _translate_frames(pipe: NeuralSimPipeline, eps: Sequence[SimEpisode], topic: str,
                      weights: dict[str, float], steps: int, seed: int, mode: str
                      ) -> list[np.ndarray]:
    frames = [e.images[topic][1] for e in eps]
    camera = topic.split('/')[-2]   # /cameras/<camera>/image_raw
    cam_index = pipe.camera_index(camera)
    acts = [e.actions[topic] for e in eps]
    for e, a in zip(eps, acts):
        if a.shape[1] != pipe.config.action_dim:
            raise InputShapeError(f'{e.path}: {a.shape[1]}-D actions, but the checkpoint was '
                                  f'trained on action_dim={pipe.config.action_dim}')
    shapes = {f.shape[1:] for f in frames}
    if len(eps) > 1 and len(shapes) == 1:
        t_max = max(len(f) for f in frames)
        pad = lambda x: np.concatenate([x, np.repeat(x[-1:], t_max - len(x), 0)])  # noqa: E731
        sim = torch.stack([pipe.encode_frames(pad(f)) for f in frames])
        act = torch.stack([normalise_actions(pad(a), pipe.config) for a in acts]).to(pipe.device)
        w = GuidanceWeights(weights['w_action'], weights['w_sim'], weights['w_joint'])
        out = pipe.generate(sim, act, w, mode, steps, seed,
                            torch.full((len(eps),), cam_index, device=pipe.device))
        h, wd = frames[0].shape[1:3]
        return [pipe.decode_frames(o[:len(f)], h, wd) for o, f in zip(out, frames)]
    return [pipe(f, a, weights['w_action'], weights['w_sim'], steps, seed, mode,
                 weights['w_joint'], camera) for f, a in zip(frames, acts)]


