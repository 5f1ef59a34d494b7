"""Closed-loop evaluation from the command line; prints the success table as markdown.

    python -m comsim_policy.evaluation.cli --checkpoints A B --tasks stack_blocks move_card \\
        --rollouts 20 --out output/evaluation

Defaults come from `config/evaluation.yaml` only; `--config` FILE sets some of them over it
(a partial file is fine), flags win over both.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from comsim_core.config import load_config as load_dataclass
from comsim_core.errors import UserError, cli_main, load_yaml
from comsim_core.paths import resolve_config_path
from comsim_policy.evaluation.closed_loop import EvaluationError, evaluate

DEFAULTS = 'config/evaluation.yaml'
SECTION = 'evaluation'


@dataclass(frozen=True)
class EvaluationConfig:
    """What `evaluate` is asked; config/evaluation.yaml is the one place its defaults live."""

    tasks: list[str]
    rollouts: int           # per task x region x variant
    regions: list[str]
    variants: list[str]     # '' or 'default' = the task's objects
    out: str
    seed: int
    timeout_s: float        # per rollout, sim seconds
    settle_s: float
    sheets: int
    lab: dict[str, Any]     # bench_lab parameter overrides
    policy: dict[str, Any]  # policy node parameter overrides


def _section(path: str | Path) -> Any:
    data = load_yaml(path, 'evaluation config')
    return data[SECTION] if isinstance(data, dict) and set(data) == {SECTION} else data


def load_config(path: str | None) -> EvaluationConfig:
    """The shipped defaults with the keys of `path` (a user's file, may be partial) over them."""
    try:
        shipped = resolve_config_path(DEFAULTS)
    except FileNotFoundError:
        if path is None:
            raise
        data, name = {}, path           # installed without the workspace: `path` says all
    else:
        data, name = _section(shipped) or {}, str(shipped)
    if path is not None:
        own = _section(path)
        data, name = ({**data, **own} if isinstance(own, dict) else own), path
    return load_dataclass(data, EvaluationConfig, name=name)


@cli_main('comsim-policy-eval')
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--checkpoints', nargs='+', required=True, type=Path)
    parser.add_argument('--tasks', nargs='+')
    parser.add_argument('--rollouts', type=int)
    parser.add_argument('--regions', nargs='+')
    parser.add_argument('--variants', nargs='+', help="'' or 'default' = the task's objects")
    parser.add_argument('--out')
    parser.add_argument('--seed', type=int)
    parser.add_argument('--timeout-s', type=float, help='per rollout, sim seconds')
    parser.add_argument('--config', help='YAML whose keys replace config/evaluation.yaml\'s')
    ns = parser.parse_args(argv)
    flags = {key: getattr(ns, key) for key in ('tasks', 'rollouts', 'regions', 'variants',
                                                 'out', 'seed', 'timeout_s')}
    cfg = dataclasses.replace(load_config(ns.config),
                              **{k: v for k, v in flags.items() if v is not None})
    missing = [c for c in ns.checkpoints if not c.is_dir()]
    if missing:
        raise UserError(f'checkpoint directory not found: {", ".join(map(str, missing))}')
    variants = ['' if v in ('', 'default') else v for v in cfg.variants]
    try:
        result = evaluate(ns.checkpoints, cfg.tasks, cfg.rollouts, tuple(cfg.regions),
                          tuple(variants), cfg.out, seed=cfg.seed, timeout_s=cfg.timeout_s,
                          settle_s=cfg.settle_s, sheets=cfg.sheets, lab=cfg.lab,
                          policy=cfg.policy,
                          log=lambda s: print(s, file=sys.stderr, flush=True))
    except (EvaluationError, RuntimeError) as exc:
        print(f'evaluation failed: {exc}', file=sys.stderr)
        return 1
    print(result.markdown())
    return 0


if __name__ == '__main__':
    sys.exit(main())
