"""Does a policy's action error depend on the look of its frames? Open-loop replay of the same
trajectories filmed in different looks (the twin's frames, their translation, the bench lab's
filming) through each checkpoint, as deployed (``PolicyRunner``).

    .venv/bin/python bench/policy_domain_gap.py \\
        --checkpoint C=RUN/policy_stage/extra/<arm>/policy/<arm>/move_card ... \\
        --data sim=RUN/twin/sim pseudo_real=RUN/neural_sim/pseudo_real gt=RUN/ground_truth \\
               real=RUN/episodes \\
        [--episodes 8] [--stride 8] [--out bench/results/policy_domain_gap.json]

Episodes are matched by name across the generated sources (a translation and the lab's filming
of trajectory k share its name), so each row of the table sees the same motions in each look;
the recorded demos are another set of motions. Error: mean |predicted - recorded| joint
command over the rows the node would execute (radians), beside the ``hold`` baseline.
Why: an arm trained on translations that succeeds on them open loop but not on the lab's
filming of the same trajectories keys on something the translation has and the lab lacks.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from comsim_core.episodes import find_episodes
from comsim_core.errors import UserError, cli_main
from comsim_policy.evaluation.open_loop import native_episode, replay
from comsim_policy.inference import PolicyRunner, limit_cpu_threads

sys.path.insert(0, str(Path(__file__).resolve().parent))   # tests load this file by path
from provenance import add_out_argument, machine, write_result  # noqa: E402


def named(pairs: list[str], flag: str) -> dict[str, Path]:
    out = {}
    for pair in pairs:
        name, sep, path = pair.partition('=')
        if not sep or not name or not path:
            raise UserError(f'{flag}: expected NAME=PATH, got {pair!r}')
        if not Path(path).exists():
            raise UserError(f'{flag} {name}: {path} does not exist')
        out[name] = Path(path)
    return out


def chosen_episodes(sources: dict[str, Path], n: int) -> dict[str, list[Path]]:
    """The first ``n`` episode names every generated source has (the same trajectories); a
    source none of whose names the others share (the recorded demos) gives its first ``n``."""
    found = {s: {p.name: p for p in find_episodes(d)} for s, d in sources.items()}
    if not all(found.values()):
        empty = [s for s, f in found.items() if not f]
        raise UserError(f'--data {empty[0]}: no episodes in {sources[empty[0]]}')
    out = {}
    for s, f in found.items():
        others = [found[o].keys() for o in found if o != s and found[o].keys() & f.keys()]
        names = sorted(set(f).intersection(*others))
        out[s] = [f[name] for name in names[:n]]
    return out


@cli_main('policy_domain_gap')
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0].replace('\n', ' '))
    ap.add_argument('--checkpoint', nargs='+', required=True, metavar='NAME=DIR')
    ap.add_argument('--data', nargs='+', required=True, metavar='NAME=DIR')
    ap.add_argument('--episodes', type=int, default=8)
    ap.add_argument('--stride', type=int, default=8, help='every STRIDE-th frame predicts')
    ap.add_argument('--first-frames', type=int, default=0,
                    help="only each episode's first N camera frames (the reach from home, "
                         'where the state alone cannot say where the object is); 0: all')
    add_out_argument(ap, __file__)
    args = ap.parse_args(argv)
    checkpoints, sources = named(args.checkpoint, '--checkpoint'), named(args.data, '--data')
    limit_cpu_threads()
    episodes = chosen_episodes(sources, args.episodes)
    t0 = time.monotonic()
    table: dict[str, dict[str, dict]] = {}
    for cname, ckpt in checkpoints.items():
        runner = PolicyRunner.load(ckpt, device='cpu')
        for sname, paths in episodes.items():
            rows = [replay(runner, native_episode(p, runner.config), args.stride,
                           until=args.first_frames or None) for p in paths]
            cell = {'episodes': [p.name for p in paths],
                    'mae': float(np.mean([r['mae'] for r in rows])),
                    'hold_mae': float(np.mean([r['hold_mae'] for r in rows])),
                    'mae_per_joint': np.mean([r['mae_per_joint'] for r in rows], 0).round(4)
                    .tolist(),
                    'mae_per_row': np.mean([r['mae_per_row'] for r in rows], 0).round(4).tolist(),
                    'mae_per_episode': [round(r['mae'], 4) for r in rows]}
            table.setdefault(cname, {})[sname] = cell
            print(f'{cname:14s} {sname:12s} mae {cell["mae"]:.4f} (hold {cell["hold_mae"]:.4f}) '
                  f'over {len(rows)} episodes', flush=True)
    names = list(sources)
    lines = ['| checkpoint | ' + ' | '.join(names) + ' |', '|---' * (len(names) + 1) + '|']
    lines += [f'| {c} | ' + ' | '.join(f'{table[c][s]["mae"]:.4f}' for s in names) + ' |'
              for c in checkpoints]
    print('\n'.join(lines))
    write_result(args.out, {'checkpoints': {k: str(v) for k, v in checkpoints.items()},
                            'data': {k: str(v) for k, v in sources.items()},
                            'stride': args.stride, 'first_frames': args.first_frames,
                            'table': table,
                            'wall_s': round(time.monotonic() - t0)}, machine())
    return 0


if __name__ == '__main__':
    sys.exit(main())
