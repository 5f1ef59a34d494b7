"""Every arm of an experiment run side by side: the run's own checkpoints and the arms added by
``bench/experiment_extra_arm.py`` (``<run>/policy_stage/extra/*``), each ``k/N`` with its
Wilson interval per region, and the exact McNemar test of every two on the shared seeds.

    .venv/bin/python bench/experiment_pairs.py --run output/main_job/<run> [--task move_card]
    .venv/bin/python bench/experiment_pairs.py --results bench/results/experiment_extra_arm_*.json
    .venv/bin/python bench/experiment_pairs.py --run RUN --seeds 1040 1160   # seeds added later

Why: the extra-arm bench pairs an added arm with the run's checkpoints only; arms added in later
sessions (say B and C, both retrained at more steps) are compared here. ``--results`` pairs arms
of different runs from the per-seed outcomes their result files keep (a session's machine
holds one run and a few arms; the next one may not have it): the rollouts are paired by layout
seed, the same bench-lab layouts when the evaluation seeds agree, while the arms' data differ
by more than their sources (another recording of the demonstrations). Reads only; the result
goes to ``bench/results/experiment_pairs_<run>.json`` (``experiment_pairs_results.json``).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from experiment_extra_arm import read_rollouts
from provenance import ROOT, machine, write_result

from comsim_core.errors import UserError, cli_main
from comsim_core.experiment.run import run_settings
from comsim_policy.evaluation.results import Evaluation, Rollout


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


def result_rollouts(paths: list[Path], task: str) -> tuple[Evaluation, int]:
    """The arms of result files (``experiment_extra_arm`` results, or this bench's own) as
    rollouts named ``<run folder>:<arm>``, from the outcome per seed each keeps; and the
    evaluation seed they share (one clear line when a file lacks outcomes or the seeds
    differ: then their layouts are not the same)."""
    rolls: list[Rollout] = []
    seeds: dict[int, str] = {}
    for path in paths:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise UserError(f'{path}: not a readable result file ({exc})') from None
        run = Path(str(data.get('run', path.stem))).name
        seed = data.get('eval_seed', data.get('settings', {}).get('eval_seed'))
        if seed is None:
            raise UserError(f'{path}: no eval_seed (expected settings.eval_seed or eval_seed)')
        seeds.setdefault(int(seed), str(path))
        if 'cells' in data:
            cells = [(f"{run}:{c['arm'].removeprefix('run:')}", c['region'], c.get('outcomes'))
                     for c in data['cells']]
        else:
            # the arm's folder where kept (two C of one run, say, from two translators)
            arm = data.get('folder') or data.get('arm', '?').split(':')[0]
            cells = [(f'{run}:{arm}', region, cell.get('outcomes'))
                     for region, cell in data.get('tasks', {}).get(task, {}).items()
                     if isinstance(cell, dict) and 'k' in cell]
        if not cells:
            raise UserError(f'{path}: no cells of task {task!r}')
        for name, region, outcomes in cells:
            if outcomes is None:
                raise UserError(f'{path}: {name} {region} keeps no per-seed outcomes '
                                "(key 'outcomes'; results written before they were kept)")
            rolls += [Rollout(name, task, region, '', int(s), bool(ok), '', 0.0, 0.0)
                      for s, ok in outcomes.items()]
    if len(seeds) > 1:
        raise UserError(f'result files evaluated from different seeds {seeds}: their layouts '
                        'differ, so their rollouts do not pair')
    return Evaluation(rolls), next(iter(seeds))


def seeds_between(ev: Evaluation, first: int, end: int) -> Evaluation:
    """The rollouts on layout seeds ``first <= seed < end`` (one clear line when none)."""
    kept = [r for r in ev.rollouts if first <= r.seed < end]
    if not kept:
        raise UserError(f'--seeds {first} {end}: no rollouts on those seeds')
    return Evaluation(kept)


def summary(ev: Evaluation) -> dict:
    """{'cells': [arm, region, k, n, interval, outcomes per seed], 'pairs': [a, b, region,
    only_a, only_b, p]}."""
    cells = []
    outcomes: dict[tuple, dict[str, bool]] = {}
    for r in sorted(ev.rollouts, key=lambda r: r.seed):
        outcomes.setdefault((r.checkpoint, r.region), {})[str(r.seed)] = r.success
    for row in ev.table():
        lo, hi = row['wilson_95']
        cells.append({'arm': row['checkpoint'], 'region': row['region'],
                      'k': row['successes'], 'n': row['rollouts'],
                      'interval': [round(lo, 3), round(hi, 3)],
                      'outcomes': outcomes[row['checkpoint'], row['region']]})
    pairs = [{'a': p['a'], 'b': p['b'], 'region': p['region'], 'pairs': p['pairs'],
              'only_a': p['only_a'], 'only_b': p['only_b'], 'p': round(p['p_mcnemar'], 4)}
             for p in ev.paired()]
    return {'cells': cells, 'pairs': pairs}


@cli_main('experiment_pairs')
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    which = ap.add_mutually_exclusive_group(required=True)
    which.add_argument('--run', type=Path, help='the run folder')
    which.add_argument('--results', type=Path, nargs='+', metavar='JSON',
                       help='result files of arms from any runs, paired by layout seed')
    ap.add_argument('--task', default='move_card')
    ap.add_argument('--seeds', type=int, nargs=2, metavar=('FIRST', 'END'),
                    help='only layout seeds FIRST <= seed < END: a cell extended after its '
                         'first rollouts were seen is tested again on the seeds added')
    ap.add_argument('--out', type=Path, help='result JSON (default '
                    'bench/results/experiment_pairs_<run folder name | results>.json)')
    args = ap.parse_args(argv)
    if args.results:
        ev, seed = result_rollouts(args.results, args.task)
        source = {'results': [str(p) for p in args.results], 'eval_seed': seed}
        default = ROOT / 'bench/results/experiment_pairs_results.json'
    else:
        run = args.run.resolve()
        if not run.is_dir():
            raise UserError(f'--run: no folder at {run}')
        ev = arm_rollouts(run, args.task)
        source = {'run': str(run), 'eval_seed': run_settings(run).get('eval_seed')}
        default = ROOT / f'bench/results/experiment_pairs_{run.name}.json'
    if args.seeds:
        ev = seeds_between(ev, *args.seeds)
        source['seeds'] = list(args.seeds)
    result = summary(ev)
    for c in result['cells']:
        lo, hi = c['interval']
        print(f"{c['arm']:40s} {c['region']:4s} {c['k']:2d}/{c['n']} ({lo:.0%}–{hi:.0%})")
    for p in result['pairs']:
        print(f"{p['a']} vs {p['b']} {p['region']}: {p['only_a']} vs {p['only_b']} "
              f"discordant, p = {p['p']}")
    write_result(args.out or default, {**source, 'task': args.task, **result}, machine())
    return 0


if __name__ == '__main__':
    sys.exit(main())
