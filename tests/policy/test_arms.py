"""Training arms: the paper's arms, which episodes each trains on, one normaliser for all."""
from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file

from comsim_policy.arms import Arm, arm_specs, normaliser_data, paper_arms, select_arms
from comsim_policy.data.episode_arrays import EpisodeDataError
from comsim_policy.stage import arm_config, train_policy
from fixtures.policy_episodes import tiny_config, write_episode


def test_paper_arms_are_the_papers_comparison_plus_the_oracle():
    arms = paper_arms(10, 200)
    assert [a.label.split(':')[0] for a in arms] == ['A', "A'", 'B', 'C', 'D', 'E']
    assert [dict(a.counts) for a in arms] == [
        {'real': 10}, {'real': 20}, {'real': 10, 'sim': 200}, {'real': 10, 'pseudo_real': 200},
        {'pseudo_real': 200}, {'real': 10, 'gt': 200}]
    c = arms[3]
    assert c.name == 'real10_pseudo200' and dict(c.weights) == {'real': 0.5, 'pseudo_real': 0.5}
    assert [a.name for a in select_arms(arms, ['C', 'A'])] == ['real10_pseudo200', 'real10']
    with pytest.raises(ValueError, match="unknown arms \\['F'\\]"):
        select_arms(arms, ['F'])
    with pytest.raises(ValueError, match='unknown sources'):
        Arm('x', 'x', {'videos': 3})


def test_arm_specs_take_the_first_successful_episodes_of_the_task(tmp_path):
    real = tmp_path / 'real'
    for seed in range(5):
        write_episode(real, seed, n_frames=4, size=(16, 16), task='move_card',
                      success=seed != 1)
    write_episode(real, 9, n_frames=4, size=(16, 16), task='stack_blocks')
    names = sorted(p.name for p in real.iterdir() if p.is_dir())
    small, large = Arm('a', 'a', {'real': 2}), Arm('b', 'b', {'real': 4})
    picked = [s.path.name for s in arm_specs(small, {'real': real}, ['move_card'])]
    assert picked == [names[0], names[2]]                     # the failed seed 1 is skipped
    bigger = [s.path.name for s in arm_specs(large, {'real': real}, ['move_card'])]
    assert bigger[:2] == picked and len(bigger) == 4          # the same two, then the next
    assert {s.source for s in arm_specs(small, {'real': real})} == {'real'}
    with pytest.raises(EpisodeDataError, match='needs 5 successful real episodes .* found 4'):
        arm_specs(Arm('c', 'c', {'real': 5}), {'real': real}, ['move_card'])
    with pytest.raises(EpisodeDataError, match='needs gt episodes'):
        arm_specs(Arm('e', 'e', {'gt': 1}), {'real': real})


def test_arms_share_one_normaliser_fitted_on_their_union(tmp_path):
    real, sim = tmp_path / 'real', tmp_path / 'sim'
    for seed in (0, 1):
        write_episode(real, seed, n_frames=12, size=(24, 32), task='move_card')
    for seed in (5, 6):          # other motions (the fixture's trajectory depends on the seed)
        write_episode(sim, seed, n_frames=12, size=(24, 32), task='move_card', source='sim')
    cfg = tiny_config(max_steps=2, log_every=1)
    arms = [Arm('real2', 'A', {'real': 2}),
            Arm('real2_sim2', 'B', {'real': 2, 'sim': 2}, {'real': 0.5, 'sim': 0.5})]
    folders = {'real': real, 'sim': sim}
    union = normaliser_data(arms, folders)
    assert union == [f'{real}:real', f'{sim}:sim']
    assert normaliser_data(arms[:1], folders) == [f'{real}:real']    # the arms name the data
    stats = []
    for arm in arms:
        c = arm_config(cfg, arm, union)
        assert c.train.mixture == dict(arm.weights) and c.train.normalization_data == union
        t = train_policy(arm.name, 'move_card', arm_specs(arm, folders, ['move_card']), c,
                         tmp_path / 'out', lambda _: None, arm.label)
        assert t.label == arm.label and t.episodes['sources'] == dict(arm.counts)
        weights = load_file(str(t.path / 'model.safetensors'))
        stats.append({k: v for k, v in weights.items() if k.startswith('normalizer.')})
    assert stats[0] and all(torch.equal(v, stats[1][k]) for k, v in stats[0].items())
    # without the union the real-only arm's range is narrower: the union mattered
    alone = train_policy('alone', 'move_card', arm_specs(arms[0], folders, ['move_card']),
                         arm_config(cfg, arms[0], []), tmp_path / 'out', lambda _: None)
    own = load_file(str(alone.path / 'model.safetensors'))
    assert not all(torch.equal(v, own[k]) for k, v in stats[0].items())
