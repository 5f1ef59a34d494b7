"""bench/rollout_failures.py: failures split by whether the object moved, and the paired test
between two evaluations on the seeds both ran."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / 'bench'))
from rollout_failures import by_cell, cell_failures, paired  # noqa: E402

MSG = ('timeout after 9.0 sim s; card centre ({dx}, {dy}) m from the zone centre, '
       'zone half (0.06, 0.05)')


def rollout(seed, success, moved, dx=0.06, dy=0.08, region='id'):
    return {'checkpoint': 'p', 'task': 'move_card', 'region': region, 'variant': '',
            'seed': seed, 'success': success, 'moved_m': {'card': moved},
            'message': 'ok' if success else MSG.format(dx=dx, dy=dy)}


def test_failures_are_split_at_the_still_threshold_with_the_final_offset():
    rolls = [rollout(0, True, 0.12), rollout(1, False, 0.0), rollout(2, False, 0.009),
             rollout(3, False, 0.05, dx=0.3, dy=0.4)]
    row = cell_failures(rolls, 0.01)
    assert (row['rollouts'], row['successes']) == (4, 1)
    assert (row['failed_untouched'], row['failed_touched']) == (2, 1)
    assert row['moved_m_median_when_touched'] == 0.05
    assert row['final_offset_m_median'] == pytest.approx(0.1)   # 0.1, 0.1, 0.5


def test_results_without_object_motion_are_refused():
    bad = rollout(1, False, 0.0)
    del bad['moved_m']
    with pytest.raises(SystemExit, match='no moved_m'):
        cell_failures([bad], 0.01)


def test_paired_counts_only_shared_seeds_and_discordant_pairs():
    a = [rollout(s, s < 6, 0.1) for s in range(10)]
    b = [rollout(s, s == 0, 0.1) for s in range(8)]
    test = paired(a, b)
    assert (test['seeds'], test['only_first'], test['only_second']) == (8, 5, 0)
    assert test['mcnemar_p'] == pytest.approx(2 / 2 ** 5, abs=1e-4)
    assert list(by_cell(a + [rollout(0, True, 0.1, region='ood')])) == \
        ['p move_card id default', 'p move_card ood default']
