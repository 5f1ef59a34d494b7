"""Every arm of an experiment run side by side: the run's own checkpoints and the arms added by
``bench/experiment_extra_arm.py`` (``<run>/policy_stage/extra/*``), each ``k/N`` with its
Wilson interval per region, and the exact McNemar test of every two on the shared seeds.

    .venv/bin/python bench/experiment_pairs.py --run output/main_job/<run> [--task move_card]

Why: the extra-arm bench pairs an added arm with the run's checkpoints only; arms added in later
sessions (say B and C, both retrained at more steps) are compared here. Reads only; the result
goes to ``bench/results/experiment_pairs_<run>.json``.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from experiment_extra_arm import read_rollouts
from provenance import ROOT, machine, write_result

from comsim_core.errors import UserError, cli_main
from comsim_policy.evaluation.results import Evaluation


def arm_rollouts(run: Path, task: str) -> Evaluation:
    """The run's rollouts (checkpoints named ``run:<arm>``) and each added arm's (named by its
    folder), default object variants of ``task`` only."""
    tagged = []
    sources = [('run:', run / 'policy_stage' / 'policy' / 'evaluation')]
    extra = run / 'policy_stage' / 'extra'
    if extra.is_dir():
        sources += [('', d / 'evaluation') for d in sorted(extra.iterdir())
                    if (d / 'evaluation').is_dir()]
    for prefix, folder in sources:
        try:
            rollouts = read_rollouts(folder).rollouts
        except UserError:
            continue                       # an arm still training has no rollouts yet
        name = folder.parent.name
        tagged += [dataclasses.replace(r, checkpoint=prefix + (r.checkpoint if prefix else name))
                   for r in rollouts if r.task == task and r.cell[2] == 'default']
    if not tagged:
        raise UserError(f'{run}: no rollouts of task {task!r} in the run or under '
                        f'policy_stage/extra')
    return Evaluation(tagged)


def summary(ev: Evaluation) -> dict:
    """{'cells': [arm, region, k, n, interval], 'pairs': [a, b, region, only_a, only_b, p]}."""
    cells = []
    for row in ev.table():
        lo, hi = row['wilson_95']
        cells.append({'arm': row['checkpoint'], 'region': row['region'],
                      'k': row['successes'], 'n': row['rollouts'],
                      'interval': [round(lo, 3), round(hi, 3)]})
    pairs = [{'a': p['a'], 'b': p['b'], 'region': p['region'], 'pairs': p['pairs'],
              'only_a': p['only_a'], 'only_b': p['only_b'], 'p': round(p['p_mcnemar'], 4)}
             for p in ev.paired()]
    return {'cells': cells, 'pairs': pairs}


@cli_main('experiment_pairs')
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--run', type=Path, required=True, help='the run folder')
    ap.add_argument('--task', default='move_card')
    ap.add_argument('--out', type=Path, help='result JSON (default '
                    'bench/results/experiment_pairs_<run folder name>.json)')
    args = ap.parse_args(argv)
    run = args.run.resolve()
    if not run.is_dir():
        raise UserError(f'--run: no folder at {run}')
    result = summary(arm_rollouts(run, args.task))
    for c in result['cells']:
        lo, hi = c['interval']
        print(f"{c['arm']:40s} {c['region']:4s} {c['k']:2d}/{c['n']} ({lo:.0%}–{hi:.0%})")
    for p in result['pairs']:
        print(f"{p['a']} vs {p['b']} {p['region']}: {p['only_a']} vs {p['only_b']} "
              f"discordant, p = {p['p']}")
    write_result(args.out or ROOT / f'bench/results/experiment_pairs_{run.name}.json',
                 {'run': str(run), 'task': args.task, **result}, machine())
    return 0


if __name__ == '__main__':
    sys.exit(main())
