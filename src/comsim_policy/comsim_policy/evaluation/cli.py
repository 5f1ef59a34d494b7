"""Closed-loop evaluation from the command line; prints the success table as markdown.

    python -m comsim_policy.evaluation.cli --checkpoints A B --tasks stack_blocks move_card \\
        --rollouts 20 --out output/evaluation

Defaults come from `config/evaluation.yaml` (`--config` to use another file); flags win.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from comsim_core.errors import UserError, cli_main, load_yaml
from comsim_core.paths import resolve_config_path
from comsim_policy.evaluation.closed_loop import EvaluationError, evaluate

KEYS = {'tasks', 'rollouts', 'regions', 'variants', 'out', 'seed', 'timeout_s', 'settle_s',
        'sheets', 'lab', 'policy'}


def load_config(path: str | None) -> dict:
    if path is None:
        try:
            path = resolve_config_path('config/evaluation.yaml')
        except FileNotFoundError:
            return {}
    data = load_yaml(path, 'evaluation config') or {}
    if not isinstance(data, dict):
        raise UserError(f'{path}: expected a mapping of {", ".join(sorted(KEYS))}')
    data = data.get('evaluation', data)
    unknown = set(data) - KEYS
    if unknown:
        raise UserError(f'{path}: unknown key(s) {", ".join(sorted(map(str, unknown)))}; '
                        f'known: {", ".join(sorted(KEYS))}')
    return data


@cli_main('comsim-policy-eval')
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--checkpoints', nargs='+', required=True, type=Path)
    parser.add_argument('--tasks', nargs='+')
    parser.add_argument('--rollouts', type=int)
    parser.add_argument('--regions', nargs='+')
    parser.add_argument('--variants', nargs='+', help="'' or 'default' = the task's objects")
    parser.add_argument('--out', type=Path)
    parser.add_argument('--seed', type=int)
    parser.add_argument('--timeout-s', type=float, help='per rollout, sim seconds')
    parser.add_argument('--config', help='YAML with defaults (config/evaluation.yaml)')
    ns = parser.parse_args(argv)
    cfg = load_config(ns.config)
    for key in ('tasks', 'rollouts', 'regions', 'variants', 'out', 'seed', 'timeout_s'):
        value = getattr(ns, key)
        if value is not None:
            cfg[key] = value
    missing = [c for c in ns.checkpoints if not c.is_dir()]
    if missing:
        raise UserError(f'checkpoint directory not found: {", ".join(map(str, missing))}')
    variants = ['' if v in ('', 'default') else v for v in cfg.get('variants', [''])]
    try:
        result = evaluate(ns.checkpoints, cfg.get('tasks', ['stack_blocks']),
                          int(cfg.get('rollouts', 10)), tuple(cfg.get('regions', ['id', 'ood'])),
                          tuple(variants), cfg.get('out', 'output/evaluation'),
                          seed=int(cfg.get('seed', 0)),
                          timeout_s=float(cfg.get('timeout_s', 40.0)),
                          settle_s=float(cfg.get('settle_s', 0.5)),
                          sheets=int(cfg.get('sheets', 2)), lab=cfg.get('lab'),
                          policy=cfg.get('policy'),
                          log=lambda s: print(s, file=sys.stderr, flush=True))
    except (EvaluationError, RuntimeError) as exc:
        print(f'evaluation failed: {exc}', file=sys.stderr)
        return 1
    print(result.markdown())
    return 0


if __name__ == '__main__':
    sys.exit(main())
