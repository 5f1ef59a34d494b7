"""bench/experiment_pairs.py: the run's arms and every added arm, paired on the shared seeds."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / 'bench'))
from experiment_pairs import arm_rollouts, summary  # noqa: E402

from comsim_core.errors import UserError
from comsim_policy.evaluation.results import Evaluation, Rollout


def rollouts(name, successes, region='ood', variant='', task='move_card'):
    return [Rollout(name, task, region, variant, 1000 + i, ok, '', 1.0, 1.0)
            for i, ok in enumerate(successes)]


def save(folder: Path, rolls: list[Rollout]) -> None:
    folder.mkdir(parents=True)
    Evaluation(rolls).save(folder / 'results.json')


def test_added_arms_pair_with_each_other_and_the_run(tmp_path):
    with pytest.raises(UserError, match='no rollouts of task'):
        arm_rollouts(tmp_path, 'move_card')
    save(tmp_path / 'policy_stage' / 'policy' / 'evaluation',
         rollouts('real10_move_card', [False] * 4) + rollouts('x', [True] * 4, task='other'))
    extra = tmp_path / 'policy_stage' / 'extra'
    save(extra / 'real10_gt200_steps10000' / 'evaluation',
         rollouts('real10_gt200_move_card', [True, True, True, False])
         + rollouts('real10_gt200_move_card', [True] * 4, variant='red'))   # not a default cell
    save(extra / 'real10_sim200_steps10000' / 'evaluation',
         rollouts('real10_sim200_move_card', [False, False, True, False]))
    (extra / 'still_training').mkdir()
    res = summary(arm_rollouts(tmp_path, 'move_card'))
    cells = {(c['arm'], c['region']): (c['k'], c['n']) for c in res['cells']}
    assert cells == {('run:real10_move_card', 'ood'): (0, 4),
                     ('real10_gt200_steps10000', 'ood'): (3, 4),
                     ('real10_sim200_steps10000', 'ood'): (1, 4)}
    pair = next(p for p in res['pairs'] if p['a'] == 'real10_gt200_steps10000'
                and p['b'] == 'real10_sim200_steps10000')
    assert (pair['pairs'], pair['only_a'], pair['only_b']) == (4, 2, 0)
    assert pair['p'] == 0.5
