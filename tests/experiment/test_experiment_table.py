"""The experiment's table: k/N with Wilson intervals per arm and cell, paired McNemar tests on
shared seeds, and D against zero; the numbers must follow the trials, not a template."""
from comsim_core.experiment.table import (
    Trial,
    above_zero,
    counts,
    failure_table,
    paired_table,
    paired_tests,
    success_table,
    verdict,
)


def trials(arm, task, cell, outcomes, first_seed=1000):
    return [Trial(arm, task, cell, first_seed + i, bool(s)) for i, s in enumerate(outcomes)]


def test_success_table_puts_arms_in_rows_and_cells_in_columns_with_wilson_intervals():
    ts = (trials('A', 'move_card', 'id', [1, 0, 0, 0]) + trials('A', 'move_card', 'ood', [0] * 4)
          + trials('C', 'move_card', 'id', [1, 1, 1, 0]))
    md = success_table(ts, {'A': 'A: 10 real', 'C': 'C: 10 real + 200 pseudo-real'})
    lines = md.splitlines()
    assert lines[0] == '| arm | move_card id | move_card ood |'
    assert lines[2] == '| A: 10 real | 1/4 (5–70 %) | 0/4 (0–49 %) |'
    assert lines[3] == '| C: 10 real + 200 pseudo-real | 3/4 (30–95 %) | — |'


def test_paired_tests_match_rollouts_by_seed_and_count_only_discordant_pairs():
    # C wins on seeds 0-5 where A fails; both succeed on 6; both fail on 7-9.
    c = trials('C', 't', 'ood', [1, 1, 1, 1, 1, 1, 1, 0, 0, 0])
    a = trials('A', 't', 'ood', [0, 0, 0, 0, 0, 0, 1, 0, 0, 0])
    (test,) = paired_tests(c + a, [('C', 'A')])
    assert (test['pairs'], test['successes_a'], test['successes_b']) == (10, 7, 1)
    assert (test['only_a'], test['only_b']) == (6, 0)
    assert abs(test['p_mcnemar'] - 2 / 2 ** 6) < 1e-12       # 6 discordant, all one way
    assert verdict(test) == 'C > A'
    assert '| C vs A | t | ood | 10 | 7 vs 1 | 6 | 0 | +60 pts | 0.0312 | C > A |' \
        in paired_table([test])


def test_paired_tests_use_only_the_seeds_both_arms_ran():
    c = trials('C', 't', 'id', [1, 1, 0])
    a = trials('A', 't', 'id', [0], first_seed=1001)
    (test,) = paired_tests(c + a, [('C', 'A')])
    assert (test['pairs'], test['only_a'], test['only_b']) == (1, 1, 0)
    assert verdict(test) == 'no significant difference'


def test_comparisons_skip_arms_that_did_not_run_and_cells_they_do_not_share():
    ts = trials('C', 't', 'id', [1]) + trials('B', 't', 'ood', [1])
    assert paired_tests(ts) == []


def test_above_zero_is_a_wilson_lower_bound_above_zero():
    ts = trials('D', 't', 'ood', [0] * 40) + trials('D', 't', 'id', [1] + [0] * 39)
    rows = {r['cell']: r for r in above_zero(ts, 'D')}
    assert rows['ood']['above_zero'] is False and rows['ood']['successes'] == 0
    assert rows['id']['above_zero'] is True and rows['id']['wilson_95'][0] > 0
    assert counts(ts)[('D', 't', 'id')] == (1, 40)


def test_failure_table_splits_failures_by_whether_an_object_moved():
    ts = [Trial('A', 't', 'id', 0, True, 0.12), Trial('A', 't', 'id', 1, False, 0.0),
          Trial('A', 't', 'id', 2, False, 0.004), Trial('A', 't', 'id', 3, False, 0.05),
          Trial('B', 't', 'id', 0, False, 0.2), Trial('B', 't', 'ood', 0, True, 0.1)]
    lines = failure_table(ts, {'A': 'A', 'B': 'B'}).splitlines()
    assert lines[0] == '| arm | t id | t ood |'
    assert lines[2] == '| A | 2 / 1 | — |'     # two never moved (< 1 cm), one pushed astray
    assert lines[3] == '| B | 0 / 1 | 0 / 0 |'
