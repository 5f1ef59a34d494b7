"""Paired episodes (real + twin camera streams + commanded actions) -> training clips.

A paired episode is a rosbag2 episode holding ``/real/cameras/<cam>/image_raw`` and
``/sim/cameras/<cam>/image_raw`` with the same header stamps, ``/joint_states`` and the command
topic, and where the replay wrote them ``/sim/cameras/<cam>/objects`` (which twin object each
render pixel shows). The action of a frame is the joint target in force at that frame (the
measured joint position before the first command arrives).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset

from ..config import NeuralSimConfig
from ..errors import InputShapeError, MissingStreamError, NeuralSimError
from .frames import frames_to_tensor, resize_clip


@dataclass
class PairedClip:
    """One camera of a paired episode in memory: (T, H, W, 3) uint8 real and sim, (T, A)
    actions, (T, H, W) uint8 object ids of the sim frames where the replay wrote them (0: no
    object); ``camera`` '' means the config's first camera."""

    real: np.ndarray
    sim: np.ndarray
    actions: np.ndarray
    name: str = ''
    camera: str = ''
    objects: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = len(self.real)
        if self.real.shape != self.sim.shape:
            raise InputShapeError(f'{self.name}: real {self.real.shape} and sim '
                                  f'{self.sim.shape} clips differ')
        if self.actions.ndim != 2 or len(self.actions) != n:
            raise InputShapeError(f'{self.name}: actions {self.actions.shape} do not give one '
                                  f'row per frame ({n} frames)')
        if self.objects is not None and self.objects.shape != self.sim.shape[:3]:
            raise InputShapeError(f'{self.name}: object masks {self.objects.shape} do not '
                                  f'match the sim frames {self.sim.shape[:3]}')


def paired_topics(camera: str) -> tuple[str, str]:
    return f'/real/cameras/{camera}/image_raw', f'/sim/cameras/{camera}/image_raw'


def load_paired_episode(path: str | Path, camera: str = 'front',
                        command_topic: str = '/joint_trajectory_controller/joint_trajectory',
                        joint_topic: str = '/joint_states') -> PairedClip:
    """Read one paired episode; ``MissingStreamError`` names any absent stream."""
    from comsim_core.episodes import Episode  # noqa: PLC0415  (ROS-free import, but heavy)
    from comsim_core.episodes.paired import sim_objects_topic  # noqa: PLC0415

    real_t, sim_t = paired_topics(camera)
    objects_t = sim_objects_topic(camera)
    with Episode.open(path) as ep:
        topics = ep.topics
        missing = [t for t in (real_t, sim_t, joint_topic, command_topic) if t not in topics]
        if missing:
            raise MissingStreamError(f'paired episode {path} lacks {missing}; it has {topics}')
        images = [real_t, sim_t] + ([objects_t] if objects_t in topics else [])
        real, sim, objects, actions = [], [], [], []
        for fr in ep.frames(images, joint_topic=joint_topic,
                            command_topic=command_topic, skip_unaligned=True):
            real.append(fr.images[real_t])
            sim.append(fr.images[sim_t])
            if objects_t in fr.images:
                objects.append(fr.images[objects_t][..., 0])   # mono8 decodes to 3 channels
            cmd = fr.command if fr.command is not None else fr.joint_position
            actions.append(np.asarray(cmd, dtype=np.float32))
    if not real:
        raise NeuralSimError(f'paired episode {path}: no frame where real, sim and joint states '
                             f'align')
    return PairedClip(np.stack(real), np.stack(sim), np.stack(actions), Path(path).name,
                      camera, np.stack(objects) if objects else None)


def load_paired_dir(directory: str | Path, cameras: str | Sequence[str] = 'front',
                    command_topic: str = '/joint_trajectory_controller/joint_trajectory'
                    ) -> list[PairedClip]:
    """Every camera of every episode (a folder with ``metadata.yaml``) under ``directory``;
    hidden work-in-progress and failed output is skipped (``find_episodes``)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f'no paired-episode directory at {directory}')
    from comsim_core.episodes import find_episodes  # noqa: PLC0415  (heavy, as above)
    eps = find_episodes(directory)
    if not eps:
        raise NeuralSimError(f'no rosbag2 episodes (metadata.yaml) under {directory}')
    cams = [cameras] if isinstance(cameras, str) else list(cameras)
    return [load_paired_episode(p, cam, command_topic) for p in eps for cam in cams]


def action_stats(clips: list[PairedClip]) -> tuple[list[float], list[float]]:
    """Per-dimension mean and std (std floored so constant joints stay finite)."""
    a = np.concatenate([c.actions for c in clips]).astype(np.float64)
    std = a.std(0)
    std = np.where(std < 1e-3, 1.0, std)
    return a.mean(0).tolist(), std.tolist()


def normalise_actions(actions: np.ndarray, cfg: NeuralSimConfig) -> torch.Tensor:
    """(T, A) -> float tensor with the config's action statistics applied."""
    if actions.ndim != 2 or actions.shape[1] != cfg.action_dim:
        raise InputShapeError(f'actions must be (T, action_dim={cfg.action_dim}), got '
                              f'{actions.shape}')
    a = torch.as_tensor(np.asarray(actions, dtype=np.float32))
    if cfg.action_mean is not None and cfg.action_std is not None:
        a = (a - torch.tensor(cfg.action_mean)) / torch.tensor(cfg.action_std)
    return a


class ClipDataset(Dataset):
    """Windows of ``cfg.frames`` frames (stride ``cfg.clip_stride``) over paired clips.

    Frames are resized to the config resolution (and encoded to latents when a codec is
    given) once, up front. A window's first ``cfg.context_frames`` frames are the context the
    trainer may reveal; the model learns to continue from them.
    """

    def __init__(self, clips: list[PairedClip], cfg: NeuralSimConfig, codec: object = None
                 ) -> None:
        if not clips:
            raise NeuralSimError('no paired clips to train on')
        self.cfg = cfg
        self.items: list[tuple[torch.Tensor, ...]] = []
        self.index: list[tuple[int, int]] = []
        for clip in clips:
            if clip.actions.shape[1] != cfg.action_dim:
                raise InputShapeError(f'{clip.name}: actions have {clip.actions.shape[1]} '
                                      f'dimensions; config action_dim is {cfg.action_dim}')
            if clip.camera and clip.camera not in cfg.cameras:
                raise InputShapeError(f'{clip.name}: camera {clip.camera!r} is not one of the '
                                      f'config cameras {cfg.cameras}')
            if len(clip.real) < cfg.frames:
                continue
            cam = torch.tensor(cfg.cameras.index(clip.camera) if clip.camera else 0)
            real = frames_to_tensor(clip.real, cfg.height, cfg.width)
            sim = frames_to_tensor(clip.sim, cfg.height, cfg.width)
            if codec is not None:
                real, sim = codec.encode(real).cpu(), codec.encode(sim).cpu()
            k = len(self.items)
            self.items.append((real, sim, normalise_actions(clip.actions, cfg), cam,
                               object_weights(clip, cfg)))
            starts = range(0, len(clip.real) - cfg.frames + 1, max(1, cfg.clip_stride))
            self.index.extend((k, s) for s in starts)
        if not self.index:
            raise InputShapeError(f'every clip is shorter than the window ({cfg.frames} frames)')

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        k, s = self.index[i]
        real, sim, act, cam, objects = self.items[k]
        f = self.cfg.frames
        return {'real': real[s:s + f], 'sim': sim[s:s + f], 'actions': act[s:s + f],
                'camera': cam, 'objects': objects[s:s + f]}


def object_weights(clip: PairedClip, cfg: NeuralSimConfig) -> torch.Tensor:
    """(T, 1, h, w) float at the resolution the model denoises: how much of each of its pixels
    the twin's objects cover (0 without masks, or when the loss does not weigh them)."""
    h, w = cfg.model_hw
    if clip.objects is None or cfg.object_loss_weight == 1.0:
        return torch.zeros(len(clip.sim), 1, h, w)
    covered = torch.from_numpy(np.ascontiguousarray(clip.objects > 0)).float()[:, None]
    return resize_clip(covered, h, w).clamp(0, 1)
