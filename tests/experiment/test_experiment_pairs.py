"""bench/experiment_pairs.py: the run's arms and every added arm, paired on the shared seeds."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / 'bench'))
from experiment_pairs import arm_rollouts, result_rollouts, seeds_between, summary  # noqa: E402

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


def extra_arm_result(path: Path, run: str, arm: str, ood: dict | None, eval_seed=1000,
                     folder: str | None = None) -> Path:
    cell = {'k': sum((ood or {}).values()), 'n': len(ood or {}), 'interval': [0, 1]}
    if ood is not None:
        cell['outcomes'] = ood
    path.write_text(json.dumps({'run': f'/work/paper/{run}', 'arm': arm,
                                'settings': {'eval_seed': eval_seed},
                                'tasks': {'move_card': {'ood': cell, 'steps': 10}},
                                **({'folder': folder} if folder else {})}))
    return path


def test_two_arms_of_one_letter_and_run_keep_apart_by_their_folders(tmp_path):
    label = 'C: 10 real + 200 pseudo-real'
    c = extra_arm_result(tmp_path / 'c.json', 'run1', label, {'1000': True, '1001': False},
                         folder='real10_pseudo200')
    w = extra_arm_result(tmp_path / 'w.json', 'run1', label, {'1000': True, '1001': True},
                         folder='real10_pseudo200_pr-w64')
    cells = {x['arm']: x['k'] for x in summary(result_rollouts([c, w], 'move_card')[0])['cells']}
    assert cells == {'run1:real10_pseudo200': 1, 'run1:real10_pseudo200_pr-w64': 2}


def test_arms_of_different_runs_pair_by_layout_seed_from_their_result_files(tmp_path):
    c = extra_arm_result(tmp_path / 'c.json', 'run1', 'C: 10 real + 200 pseudo-real',
                         {'1000': True, '1001': True, '1002': True, '1003': False})
    a = extra_arm_result(tmp_path / 'a.json', 'run2', 'A: 10 real',
                         {'1001': False, '1002': False, '1003': False, '1004': True})
    ev, seed = result_rollouts([c, a], 'move_card')
    assert seed == 1000
    res = summary(ev)
    cells = {(x['arm'], x['region']): (x['k'], x['n']) for x in res['cells']}
    assert cells == {('run1:C', 'ood'): (3, 4), ('run2:A', 'ood'): (1, 4)}
    pair = res['pairs'][0]
    assert (pair['a'], pair['b'], pair['pairs'], pair['only_a'], pair['only_b']) == \
        ('run1:C', 'run2:A', 3, 2, 0)                   # seeds 1001-1003 are shared
    # this bench's own result reads back the same (its cells keep their outcomes)
    own = tmp_path / 'pairs.json'
    own.write_text(json.dumps({'run': '/x/run3', 'eval_seed': 1000, **res}))
    again, _ = result_rollouts([own], 'move_card')
    assert summary(again)['cells'] == [{**x, 'arm': 'run3:' + x['arm']} for x in res['cells']]


def test_result_files_that_cannot_pair_get_one_line(tmp_path):
    c = extra_arm_result(tmp_path / 'c.json', 'run1', 'C', {'1000': True})
    old = extra_arm_result(tmp_path / 'old.json', 'run2', 'A', None)
    other = extra_arm_result(tmp_path / 'o.json', 'run3', 'A', {'2000': True}, eval_seed=2000)
    with pytest.raises(UserError, match="old.json: run2:A ood keeps no per-seed outcomes"):
        result_rollouts([c, old], 'move_card')
    with pytest.raises(UserError, match='different seeds'):
        result_rollouts([c, other], 'move_card')
    with pytest.raises(UserError, match="no cells of task 'stack_blocks'"):
        result_rollouts([c], 'stack_blocks')
    (tmp_path / 'bad.json').write_text('{')
    with pytest.raises(UserError, match='bad.json: not a readable result file'):
        result_rollouts([tmp_path / 'bad.json'], 'move_card')


def test_a_seed_range_keeps_the_seeds_added_after_a_first_look():
    ev = Evaluation(rollouts('a', [True, False, False, False])
                    + rollouts('c', [True, True, True, True]))     # seeds 1000-1003
    later = summary(seeds_between(ev, 1001, 1004))
    assert {c['arm']: (c['k'], c['n']) for c in later['cells']} == {'a': (0, 3), 'c': (3, 3)}
    assert (later['pairs'][0]['only_a'], later['pairs'][0]['only_b']) == (0, 3)
    with pytest.raises(UserError, match='--seeds 2000 2010: no rollouts on those seeds'):
        seeds_between(ev, 2000, 2010)
