"""Mixture of sources: episode counts, sampling weights, seeded split by episode."""
from __future__ import annotations

from collections import Counter

import pytest

from comsim_policy.data.mixture import (
    MixtureError,
    MixtureSampler,
    select_episodes,
    split_by_episode,
)

SOURCES = ['real'] * 12 + ['pseudo_real'] * 300 + ['sim'] * 20


def test_counts_select_exactly_that_many_episodes_per_source():
    keep = select_episodes(SOURCES, {'real': 10, 'pseudo_real': 200}, seed=3)
    got = Counter(SOURCES[i] for i in keep)
    assert got == {'real': 10, 'pseudo_real': 200}
    assert len(set(keep)) == len(keep)
    assert keep == select_episodes(SOURCES, {'real': 10, 'pseudo_real': 200}, seed=3)
    assert keep != select_episodes(SOURCES, {'real': 10, 'pseudo_real': 200}, seed=4)
    assert select_episodes(SOURCES, {}, seed=0) == list(range(len(SOURCES)))


def test_counts_beyond_what_exists_is_a_clear_error():
    with pytest.raises(MixtureError, match='13 real episodes but 12'):
        select_episodes(SOURCES, {'real': 13})


def test_weights_set_the_share_of_samples_per_source():
    # sample i belongs to source SOURCES[i]; 12 real vs 300 pseudo_real samples
    sampler = MixtureSampler(SOURCES, {'real': 1.0, 'pseudo_real': 3.0}, num_samples=20000,
                             seed=0)
    counts = Counter(SOURCES[i] for i in sampler)
    assert set(counts) == {'real', 'pseudo_real'}          # weight 0 / unlisted: never drawn
    assert counts['real'] / 20000 == pytest.approx(0.25, abs=0.015)
    assert len(sampler) == 20000


def test_no_weights_is_the_natural_mixture():
    counts = Counter(SOURCES[i] for i in MixtureSampler(SOURCES, None, 20000, seed=1))
    assert counts['pseudo_real'] / 20000 == pytest.approx(300 / 332, abs=0.015)


def test_sampler_is_seeded_and_epochs_differ():
    a = MixtureSampler(SOURCES, {'real': 1, 'sim': 1}, 100, seed=5)
    b = MixtureSampler(SOURCES, {'real': 1, 'sim': 1}, 100, seed=5)
    assert list(a) == list(b)
    b.set_epoch(1)
    assert list(a) != list(b)


def test_weights_naming_missing_sources_fail():
    with pytest.raises(MixtureError, match='only'):
        MixtureSampler(['real'] * 3, {'pseudo_real': 1.0}, 10)


def test_split_is_by_episode_seeded_and_stratified():
    train, val = split_by_episode(SOURCES, 0.1, seed=0)
    assert set(train).isdisjoint(val)
    assert sorted(train + val) == list(range(len(SOURCES)))
    per = Counter(SOURCES[i] for i in val)
    assert per == {'real': 1, 'pseudo_real': 30, 'sim': 2}
    assert (train, val) == split_by_episode(SOURCES, 0.1, seed=0)
    assert val != split_by_episode(SOURCES, 0.1, seed=1)[1]
    assert split_by_episode(['real'], 0.5) == ([0], [])   # a lone episode stays in training
