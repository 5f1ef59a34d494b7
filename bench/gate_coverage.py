"""Where the gate's policy fails against where its training layouts lie.

    .venv/bin/python bench/gate_coverage.py --episodes /work/gate/move_card/gt \\
        --results EVAL_DIR/results.json [OTHER/results.json ...] [--object card] \\
        [--axis y] [--edges -0.40 -0.20 0 0.17 0.25 0.30 0.37 0.45] \\
        [--out bench/results/gate_coverage.json]

Training side: the start position of ``--object`` in every trained-on episode (lab-checked
successes of the filmed set), from the layout of the generated sim episode each films.
Evaluation side: the bench lab is reset to each rollout's task, region and seed (what the
evaluator did) to read the same object's start. Both are binned along ``--axis``: training
episodes per bin, and per results file and region, successes per bin. A bin with few training
layouts and low success says coverage, not capacity, is the limit.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from provenance import add_out_argument, machine, write_result

from comsim_bench_lab.sim_env import BenchLabEnvironment
from comsim_core.episodes.generated_layout import generated_layout, object_starts
from comsim_core.episodes.sidecar import counts_as_success, read_sidecar
from comsim_core.errors import UserError, cli_main


def training_starts(episodes: Path, name: str) -> list[list[float]]:
    """Start xy of ``name`` in the filmed episodes under ``episodes`` that training reads
    (``counts_as_success``), from the layout of the sim episode each films."""
    out = []
    for path in sorted(p.parent for p in episodes.glob('*/episode.yaml')):
        filmed = read_sidecar(path)
        if not counts_as_success(filmed):
            continue
        objects = object_starts(generated_layout(path))
        if name not in objects:
            raise UserError(f'{path} (or the sim episode it films) lays out no '
                             f'{name!r}; it has {sorted(objects)}')
        out.append(objects[name][:2])
    if not out:
        raise UserError(f'{episodes}: no filmed episode that training reads '
                         '(expected <episode>/episode.yaml with a lab success under it)')
    return out


def rollout_starts(rollouts: list[dict], name: str) -> list[list[float]]:
    env = BenchLabEnvironment({})
    try:
        out = []
        for r in rollouts:
            env.reset(r['task'], int(r['seed']), r['region'], r['variant'] or '')
            out.append([float(v) for v in env.lab.task_state()['objects'][name]['pos'][:2]])
        return out
    finally:
        env.close()


def binned(values: np.ndarray, edges: list[float]) -> np.ndarray:
    return np.clip(np.digitize(values, edges) - 1, -1, len(edges) - 1)


@cli_main('gate_coverage')
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--episodes', type=Path, required=True, help='the filmed (gt) episodes')
    ap.add_argument('--results', type=Path, nargs='+', required=True,
                    help="comsim-policy-eval's results.json")
    ap.add_argument('--object', default='card')
    ap.add_argument('--axis', choices=('x', 'y'), default='y')
    ap.add_argument('--edges', type=float, nargs='+',
                    default=[-0.40, -0.20, 0.0, 0.17, 0.25, 0.30, 0.37, 0.45])
    add_out_argument(ap, __file__)
    args = ap.parse_args(argv)
    axis = 'xy'.index(args.axis)
    bins = [f'[{a:g}, {b:g})' for a, b in zip(args.edges[:-1], args.edges[1:], strict=False)]
    train = np.asarray(training_starts(args.episodes, args.object))[:, axis]
    train_bin = binned(train, args.edges)
    result = {'object': args.object, 'axis': args.axis, 'bins': bins,
              'training_episodes': len(train),
              'training_per_bin': [int((train_bin == i).sum()) for i in range(len(bins))],
              'evaluations': {}}
    print(f'{len(train)} training layouts, {args.object} {args.axis} per bin:')
    for b, n in zip(bins, result['training_per_bin'], strict=True):
        print(f'  {b}: {n}')
    for path in args.results:
        rollouts = json.loads(path.read_text())['rollouts']
        starts = np.asarray(rollout_starts(rollouts, args.object))[:, axis]
        where = binned(starts, args.edges)
        cells: dict[str, dict] = {}
        for r, b in zip(rollouts, where, strict=True):
            key = f"{r['checkpoint']} {r['region']}"
            cell = cells.setdefault(key, {'n': [0] * len(bins), 'successes': [0] * len(bins)})
            if b >= 0 and b < len(bins):
                cell['n'][b] += 1
                cell['successes'][b] += int(r['success'])
        result['evaluations'][str(path)] = cells
        for key, cell in cells.items():
            shown = ', '.join(f'{bins[i]} {s}/{n}' for i, (s, n) in
                              enumerate(zip(cell['successes'], cell['n'], strict=True)) if n)
            print(f'{key}: {shown}')
    write_result(args.out, result, machine())
    return 0


if __name__ == '__main__':
    sys.exit(main())
