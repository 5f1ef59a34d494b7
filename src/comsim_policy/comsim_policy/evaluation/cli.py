"""Closed-loop evaluation from the command line; prints the success table as markdown.

    python -m comsim_policy.evaluation.cli --checkpoints A B --tasks stack_blocks move_card \\
        --rollouts 20 --out output/evaluation [--mode in_process|dds] [--workers N]

`in_process` (the default) runs the bench lab, the trajectory follower and the deploy node's
controller in worker processes on sim time; `dds` runs the deploy graph (bench lab, policy
node, recorder) over ROS, as on a real arm. Defaults come from `config/evaluation.yaml` only;
`--config` FILE sets some of them over it (a partial file is fine), flags win over both.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from comsim_core.errors import UserError, cli_main
from comsim_policy.evaluation.config import MODES, EvaluationConfig, load_config

__all__ = ['EvaluationConfig', 'load_config', 'main']


@cli_main('comsim-policy-eval')
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--checkpoints', nargs='+', required=True, type=Path)
    parser.add_argument('--mode', choices=MODES)
    parser.add_argument('--workers', type=int, help='in_process: processes (0 = one per core)')
    parser.add_argument('--tasks', nargs='+')
    parser.add_argument('--rollouts', type=int)
    parser.add_argument('--regions', nargs='+')
    parser.add_argument('--variants', nargs='+', help="'' or 'default' = the task's objects")
    parser.add_argument('--out')
    parser.add_argument('--seed', type=int)
    parser.add_argument('--timeout-s', type=float, help='dds: per rollout, sim seconds')
    parser.add_argument('--config', help='YAML whose keys replace config/evaluation.yaml\'s')
    parser.add_argument('--resume', action='store_true', default=None,
                        help='in_process: keep the rollouts an interrupted run into the same '
                             '--out finished (same weights, settings, seeds); run the rest')
    ns = parser.parse_args(argv)
    flags = {key: getattr(ns, key) for key in ('mode', 'workers', 'tasks', 'rollouts',
                                                 'regions', 'variants', 'out', 'seed',
                                                 'timeout_s', 'resume')}
    cfg = dataclasses.replace(load_config(ns.config),
                              **{k: v for k, v in flags.items() if v is not None})
    missing = [c for c in ns.checkpoints if not c.is_dir()]
    if missing:
        raise UserError(f'checkpoint directory not found: {", ".join(map(str, missing))}')
    cfg = dataclasses.replace(cfg, variants=['' if v in ('', 'default') else v
                                             for v in cfg.variants])
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    if cfg.mode == 'in_process':
        from comsim_policy.evaluation.in_process import evaluate  # noqa: PLC0415
        result = evaluate(ns.checkpoints, cfg, log=log)
    else:
        from comsim_policy.evaluation.closed_loop import EvaluationError  # noqa: PLC0415
        from comsim_policy.evaluation.closed_loop import evaluate as evaluate_dds  # noqa: PLC0415
        try:
            result = evaluate_dds(ns.checkpoints, cfg.tasks, cfg.rollouts, tuple(cfg.regions),
                                  tuple(cfg.variants), cfg.out, seed=cfg.seed,
                                  timeout_s=cfg.timeout_s, settle_s=cfg.settle_s,
                                  check_every_s=cfg.check_every_s, sheets=cfg.sheets,
                                  lab=cfg.lab, policy=cfg.policy, log=log)
        except (EvaluationError, RuntimeError) as exc:
            print(f'evaluation failed: {exc}', file=sys.stderr)
            return 1
    print(result.markdown())
    return 0


if __name__ == '__main__':
    sys.exit(main())
