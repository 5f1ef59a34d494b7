"""bench/experiment_extra_arm.py: an arm added to a run pairs its rollouts with the run's on the
shared seeds (exact McNemar per checkpoint), and reads the run's rollouts from its results or,
while its evaluation is still going, from the journal."""
from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / 'bench'))
from experiment_extra_arm import (  # noqa: E402
    cell_rollouts,
    compare,
    diagnostic_arm,
    early_start,
    extra_folder,
    generated_share,
    keep_earlier,
    run_rollouts,
)

from comsim_core.errors import UserError
from comsim_policy.arms import paper_arms, select_arms
from comsim_policy.evaluation.results import Evaluation, Rollout


def rollouts(name, successes, region='id', variant=''):
    return [Rollout(name, 'move_card', region, variant, 1000 + i, ok, '', 1.0, 1.0)
            for i, ok in enumerate(successes)]


def test_pairs_on_shared_seeds_per_checkpoint_and_region():
    mine = Evaluation(rollouts('b', [True, True, True, False, True]))
    theirs = Evaluation(rollouts('a', [False, False, False, False]) +      # one seed fewer
                        rollouts('a', [True] * 5, region='ood') +
                        rollouts('a', [True] * 5, variant='red'))        # another cell
    row = compare(mine, theirs, 'move_card', ['id'])['id']
    assert (row['k'], row['n']) == (4, 5)
    assert row['interval'][0] < 0.8 < row['interval'][1]
    pair = row['paired']['a']
    assert (pair['pairs'], pair['extra_only'], pair['other_only'], pair['k_other']) == \
        (4, 3, 0, 0)
    assert pair['p'] == 0.25                      # 3 discordant pairs, all one way
    # the outcome per layout seed is kept, so an arm of another run can be paired later
    assert row['outcomes'] == {'1000': True, '1001': True, '1002': True, '1003': False,
                               '1004': True}


def test_the_runs_rollouts_come_from_results_else_the_journal(tmp_path):
    folder = tmp_path / 'policy_stage' / 'policy' / 'evaluation'
    assert run_rollouts(tmp_path).rollouts == []          # no policy stage: nothing to pair
    folder.mkdir(parents=True)
    with pytest.raises(UserError, match='no rollouts yet'):
        run_rollouts(tmp_path)                            # begun: its rollouts must be read
    rolls = rollouts('a', [True, False])
    (folder / 'rollouts.jsonl').write_text(''.join(
        json.dumps({'key': str(r.seed), 'settings': 's', 'rollout': asdict(r)}) + '\n'
        for r in rolls))
    assert run_rollouts(tmp_path).rollouts == rolls
    Evaluation(rolls[:1]).save(folder / 'results.json')
    assert run_rollouts(tmp_path).rollouts == rolls[:1]


def test_a_diagnostic_arm_is_named_for_its_data_and_bad_words_get_one_line():
    arm = diagnostic_arm(['gt=200'])
    assert (arm.name, arm.label, dict(arm.counts)) == ('gt200', 'X: 200 gt', {'gt': 200})
    assert dict(diagnostic_arm(['real=10', 'gt=200']).counts) == {'real': 10, 'gt': 200}
    with pytest.raises(UserError, match="expected SOURCE=N with N >= 1, got 'gt=0'"):
        diagnostic_arm(['gt=0'])
    with pytest.raises(UserError, match=r"unknown sources \['film'\]"):
        diagnostic_arm(['film=3'])


def test_each_added_arm_has_its_own_folder_and_a_step_count_names_it():
    arm = diagnostic_arm(['gt=200'])
    assert extra_folder(arm, None) == 'gt200'
    assert extra_folder(arm, 10000) == 'gt200_steps10000'
    assert (extra_folder(arm, 10000, Path('/work/ns_mirror/pseudo_real'))
            == 'gt200_steps10000_pr-ns_mirror')
    assert extra_folder(arm, None, None, 0.9) == 'gt200_share90'


def test_another_generated_share_is_checked_and_reaches_the_arms_mix():
    assert generated_share(None, 0.5) == 0.5
    assert generated_share(0.9, 0.5) == 0.9
    with pytest.raises(UserError, match=r'--generated-share: expected a share in \(0, 1\), got 1'):
        generated_share(1.0, 0.5)
    e = select_arms(paper_arms(10, 200, generated_share(0.9, 0.5)), ['E'])[0]
    assert dict(e.weights) == pytest.approx({'real': 0.1, 'gt': 0.9})


def test_an_arm_of_a_run_without_rollouts_is_scored_alone():
    row = compare(Evaluation(rollouts('m', [True, False, True])), Evaluation([]), 'move_card',
                  ['id'])['id']
    assert (row['k'], row['n'], row['paired']) == (2, 3, {})


def test_only_an_arm_without_pseudo_real_data_starts_before_the_neural_simulator(tmp_path):
    a, c = select_arms(paper_arms(10, 200, 0.5), ['A', 'C'])
    assert early_start(tmp_path, a)                 # no neural-sim record yet
    assert not early_start(tmp_path, c)             # C waits for its translations
    (tmp_path / 'stages').mkdir()
    (tmp_path / 'stages' / 'neural_sim.json').write_text('{"result": {}}')
    assert not early_start(tmp_path, a)             # finished: the run's folders as they are


def test_more_rollouts_extend_the_runs_seeds_and_keep_the_cells_not_asked_for():
    assert cell_rollouts(None, {'rollouts': 40}) == 40
    assert cell_rollouts(160, {'rollouts': 40}) == 160
    with pytest.raises(UserError, match='--rollouts: expected a count >= 1, got 0'):
        cell_rollouts(0, {'rollouts': 40})
    before = Evaluation(rollouts('a', [True, False]) + rollouts('a', [False, False], 'ood'))
    now = Evaluation(rollouts('a', [True, False, True], 'ood'))     # ood again, one seed more
    merged = keep_earlier(before, now)
    by_cell = {(r.region, r.seed): r.success for r in merged.rollouts}
    assert by_cell == {('id', 1000): True, ('id', 1001): False, ('ood', 1000): True,
                       ('ood', 1001): False, ('ood', 1002): True}
