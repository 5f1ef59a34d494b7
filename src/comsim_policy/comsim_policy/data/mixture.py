"""Mixing real, sim and pseudo-real episodes: episode counts, sampling weights, splits.

ComSim's point is a few real demonstrations plus many generated ones, so how much each source
contributes is a training knob of its own: ``select_episodes`` fixes how many episodes of each
source are used ({real: 10, pseudo_real: 200}); ``MixtureSampler`` fixes the share of training
samples drawn from each source (weights), independent of how many windows each source has.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import numpy as np
import torch
from torch.utils.data import Sampler


class MixtureError(ValueError):
    """A requested mixture cannot be met by the episodes at hand."""


def _by_source(sources: Sequence[str]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i, s in enumerate(sources):
        out.setdefault(s, []).append(i)
    return out


def select_episodes(sources: Sequence[str], counts: Mapping[str, int] | None, seed: int = 0
                    ) -> list[int]:
    """Indices of the episodes kept: ``counts[s]`` random episodes of each listed source.

    Sources not in ``counts`` are dropped; an empty/None ``counts`` keeps everything.
    """
    if not counts:
        return list(range(len(sources)))
    groups = _by_source(sources)
    rng = np.random.default_rng(seed)
    keep: list[int] = []
    for src, n in counts.items():
        have = groups.get(src, [])
        if n < 0 or n > len(have):
            raise MixtureError(f'mixture asks for {n} {src} episodes but {len(have)} are '
                               f'available (sources present: '
                               f'{ {k: len(v) for k, v in groups.items()} })')
        keep += [int(i) for i in rng.choice(have, size=n, replace=False)]
    return sorted(keep)


def split_by_episode(sources: Sequence[str], val_fraction: float, seed: int = 0
                     ) -> tuple[list[int], list[int]]:
    """Seeded train/val split of episode indices, stratified by source.

    Each source with at least two episodes gives round(fraction * n) (at least one) to
    validation; a single episode always stays in training.
    """
    if not 0.0 <= val_fraction < 1.0:
        raise MixtureError(f'val_fraction must be in [0, 1), got {val_fraction}')
    rng = np.random.default_rng(seed)
    train: list[int] = []
    val: list[int] = []
    for _, idx in sorted(_by_source(sources).items()):
        perm = [int(i) for i in rng.permutation(idx)]
        n_val = 0
        if val_fraction > 0 and len(perm) >= 2:
            n_val = min(len(perm) - 1, max(1, round(val_fraction * len(perm))))
        val += perm[:n_val]
        train += perm[n_val:]
    return sorted(train), sorted(val)


class MixtureSampler(Sampler[int]):
    """Draws sample indices so source s gets a share ``weights[s] / sum(weights)``.

    ``sample_sources[i]`` is the source of sample i. Within a source, samples are uniform.
    Without weights every sample is equally likely (natural mixture). ``set_epoch`` reseeds.
    """

    def __init__(self, sample_sources: Sequence[str], weights: Mapping[str, float] | None,
                 num_samples: int, seed: int = 0) -> None:
        self.groups = {s: np.asarray(v, dtype=np.int64)
                       for s, v in _by_source(sample_sources).items()}
        if not self.groups:
            raise MixtureError('MixtureSampler needs at least one sample')
        if weights:
            bad = {s: w for s, w in weights.items() if w < 0}
            if bad:
                raise MixtureError(f'negative mixture weights {bad}')
            missing = [s for s, w in weights.items() if w > 0 and s not in self.groups]
            if missing:
                raise MixtureError(f'mixture weights name sources {missing} but the data has '
                                   f'only {sorted(self.groups)}')
            names = [s for s in sorted(self.groups) if weights.get(s, 0) > 0]
            if not names:
                raise MixtureError('mixture weights give no source a positive weight')
            w = np.asarray([weights[s] for s in names], dtype=np.float64)
        else:
            names = sorted(self.groups)
            w = np.asarray([len(self.groups[s]) for s in names], dtype=np.float64)
        self.sources = names
        self.probs = w / w.sum()
        self.num_samples = int(num_samples)
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return self.num_samples

    def __iter__(self) -> Iterator[int]:
        rng = np.random.default_rng([self.seed, self.epoch])
        which = rng.choice(len(self.sources), size=self.num_samples, p=self.probs)
        out = np.empty(self.num_samples, dtype=np.int64)
        for k, src in enumerate(self.sources):
            sel = which == k
            pool = self.groups[src]
            out[sel] = pool[rng.integers(0, len(pool), size=int(sel.sum()))]
        return iter(torch.from_numpy(out).tolist())
