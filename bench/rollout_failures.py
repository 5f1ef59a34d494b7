"""How in-process rollouts failed, and whether two evaluations differ on the same layouts.

    .venv/bin/python bench/rollout_failures.py EVAL_DIR/results.json [OTHER/results.json ...] \\
        [--still-m M] [--out bench/results/rollout_failures.json]

Per evaluation and cell: successes, failures in which no task object moved more than
``--still-m`` once the policy took over (the arm never touched it: a miss), and failures in
which one did (touched, but pushed or carried astray), with how far the objects moved and, where
the lab's message gives it, how far the card ended from the zone centre. With several
evaluations: exact McNemar between the first and each other one, on the seeds both ran.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np
from provenance import add_out_argument, machine, write_result

from comsim_core.experiment.table import STILL_M, Trial, paired_tests

_OFFSET = re.compile(r'\(([-\d.]+), ([-\d.]+)\) m from the zone centre')


def _median(values: list[float]) -> float | None:
    return round(float(np.median(values)), 3) if values else None


def cell_failures(rollouts: list[dict], still_m: float) -> dict:
    """Successes and the two kinds of failure of one cell's rollouts."""
    failed = [r for r in rollouts if not r['success']]
    moved = [max(r.get('moved_m', {}).values(), default=0.0) for r in failed]
    if any('moved_m' not in r for r in failed):
        raise SystemExit('rollout_failures: these results have no moved_m (evaluated before '
                         'the evaluator recorded object motion); evaluate again')
    offsets = [float(np.hypot(float(m[1]), float(m[2])))
               for r in failed if (m := _OFFSET.search(r['message']))]
    touched = [d for d in moved if d > still_m]
    return {'rollouts': len(rollouts), 'successes': len(rollouts) - len(failed),
            'failed_untouched': len(moved) - len(touched), 'failed_touched': len(touched),
            'moved_m_median_when_touched': _median(touched),
            'final_offset_m_median': _median(offsets)}


def by_cell(rollouts: list[dict]) -> dict[str, list[dict]]:
    cells: dict[str, list[dict]] = {}
    for r in rollouts:
        key = f"{r['checkpoint']} {r['task']} {r['region']} {r['variant'] or 'default'}"
        cells.setdefault(key, []).append(r)
    return cells


def paired(a: list[dict], b: list[dict]) -> dict:
    """The experiment's paired test (``table.paired_tests``) between two cells' rollouts."""
    trials = [Trial(arm, 'cell', 'cell', r['seed'], r['success'])
              for arm, rollouts in (('first', a), ('second', b)) for r in rollouts]
    tests = paired_tests(trials, [('first', 'second')])
    t = tests[0] if tests else {'pairs': 0, 'only_a': 0, 'only_b': 0, 'p_mcnemar': 1.0}
    return {'seeds': t['pairs'], 'only_first': t['only_a'], 'only_second': t['only_b'],
            'mcnemar_p': round(t['p_mcnemar'], 4)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('results', type=Path, nargs='+', help="comsim-policy-eval's results.json")
    ap.add_argument('--still-m', type=float, default=STILL_M)
    add_out_argument(ap, __file__)
    args = ap.parse_args()
    evaluations = {str(p): json.loads(p.read_text())['rollouts'] for p in args.results}
    result = {'still_m': args.still_m, 'evaluations': {}, 'paired': []}
    cells_of = {}
    for path, rollouts in evaluations.items():
        cells = by_cell(rollouts)
        cells_of[path] = cells
        result['evaluations'][path] = {k: cell_failures(v, args.still_m)
                                       for k, v in cells.items()}
        for key, row in result['evaluations'][path].items():
            print(f"{key}: {row['successes']}/{row['rollouts']}; failed untouched "
                  f"{row['failed_untouched']}, touched {row['failed_touched']} (moved median "
                  f"{row['moved_m_median_when_touched']} m); final offset median "
                  f"{row['final_offset_m_median']} m")
    first, *others = list(evaluations)
    for other in others:
        for (ka, a), (kb, b) in zip(sorted(cells_of[first].items()),
                                    sorted(cells_of[other].items()), strict=False):
            row = {'first': ka, 'second': kb, **paired(a, b)}
            result['paired'].append(row)
            print(f"{ka} vs {kb}: {row['only_first']} vs {row['only_second']} layouts solved "
                  f"by one only, McNemar p = {row['mcnemar_p']}")
    write_result(args.out, result, machine())
    return 0


if __name__ == '__main__':
    sys.exit(main())
