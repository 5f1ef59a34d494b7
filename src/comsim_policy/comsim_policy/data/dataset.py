"""``WindowDataset``: (observation window, action sequence) samples over decoded episodes.

Sample ``(e, t)``: observations at steps t-T_obs+1..t, actions at t-T_obs+1..t-T_obs+horizon
(Chi et al.'s layout: row T_obs-1 of the action sequence is "now"). Indices outside the
episode repeat the first/last step, so every frame is a sample and the policy learns to hold
still at the end.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import Dataset

from ..config import PolicyConfig
from ..preprocessing import ImagePreprocessor
from .episode_arrays import EpisodeArrays


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
        n = len(ep)
        obs_idx = np.clip(np.arange(t - c.n_obs_steps + 1, t + 1), 0, n - 1)
        act_idx = np.clip(np.arange(t - c.n_obs_steps + 1, t - c.n_obs_steps + 1 + c.horizon),
                          0, n - 1)
        rng = self._rng()
        images = {}
        for key, topic in zip(c.camera_keys, c.camera_topics, strict=True):
            frames = self.preprocessor.crop(ep.images[topic][obs_idx], rng)
            images[key] = torch.from_numpy(np.ascontiguousarray(frames)).permute(0, 3, 1, 2)
        return {'images': images,
                'state': torch.from_numpy(np.asarray(ep.state[obs_idx], dtype=np.float32)),
                'action': torch.from_numpy(np.asarray(ep.action[act_idx], dtype=np.float32))}
