"""``WindowDataset``: (observation window, action sequence) samples over decoded episodes.

Steps are one control period apart (``frame_stride`` frames of the episode, from the policy's
``control_hz``), so the policy's horizon covers the same seconds whatever rate an episode was
filmed at. Sample ``(e, t)``: observations at steps -T_obs+1..0 from frame t, actions at steps
-T_obs+1..-T_obs+horizon (Chi et al.'s layout: row T_obs-1 of the action sequence is "now").
Every frame starts a window, so each phase offset of a faster camera is a sample; indices
outside the episode repeat the first/last frame, so the policy learns to hold still at the end.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import Dataset

from ..config import PolicyConfig
from ..preprocessing import ImagePreprocessor
from .episode_arrays import EpisodeArrays, EpisodeDataError


def frame_stride(episode: EpisodeArrays, control_hz: float, tolerance: float = 0.15) -> int:
    """Frames between two control steps: the episode's frame rate over ``control_hz``, which
    must be a whole number (within ``tolerance``) — a window spans the same seconds on every
    episode, or the actions would be for a different rate than the policy runs at."""
    rate = episode.rate_hz
    if rate is None:
        return 1
    ratio = rate / float(control_hz)
    stride = int(round(ratio))
    if stride < 1 or abs(ratio - stride) > tolerance:
        raise EpisodeDataError(f'{episode.name}: frames at {rate:.2f} Hz are not a whole multiple '
                               f'of the policy\'s control_hz {control_hz:g} (ratio {ratio:.2f}); '
                               f'film at a multiple of it or change control_hz')
    return stride


class WindowDataset(Dataset):
    """Windows over ``episodes``; ``train=True`` random-crops, else centre-crops."""

    def __init__(self, episodes: list[EpisodeArrays], config: PolicyConfig, train: bool = True,
                 seed: int = 0) -> None:
        if not episodes:
            raise ValueError('WindowDataset needs at least one episode')
        self.episodes = episodes
        self.config = config
        self.preprocessor = ImagePreprocessor.from_config(config)
        self.train = train
        self.seed = seed
        self._epoch_rng = np.random.default_rng(seed)
        self.index = np.array([(e, t) for e, ep in enumerate(episodes) for t in range(len(ep))],
                              dtype=np.int64)
        self.episode_of = self.index[:, 0]
        self.strides = [frame_stride(ep, config.control_hz) for ep in episodes]

    def __len__(self) -> int:
        return int(self.index.shape[0])

    def _rng(self) -> np.random.Generator | None:
        if not self.train:
            return None
        info = torch.utils.data.get_worker_info()
        if info is not None and not hasattr(self, '_worker_rng'):
            self._worker_rng = np.random.default_rng([self.seed, info.id, info.seed % 2**32])
        return getattr(self, '_worker_rng', self._epoch_rng)

    def __getitem__(self, i: int) -> dict:
        e, t = (int(v) for v in self.index[i])
        ep = self.episodes[e]
        c = self.config
        n, s = len(ep), self.strides[e]
        first = t - (c.n_obs_steps - 1) * s
        obs_idx = np.clip(first + s * np.arange(c.n_obs_steps), 0, n - 1)
        act_idx = np.clip(first + s * np.arange(c.horizon), 0, n - 1)
        rng = self._rng()
        images = {}
        for key, topic in zip(c.camera_keys, c.camera_topics, strict=True):
            frames = self.preprocessor.crop(ep.images[topic][obs_idx], rng)
            images[key] = torch.from_numpy(np.ascontiguousarray(frames)).permute(0, 3, 1, 2)
        return {'images': images,
                'state': torch.from_numpy(np.asarray(ep.state[obs_idx], dtype=np.float32)),
                'action': torch.from_numpy(np.asarray(ep.action[act_idx], dtype=np.float32))}
