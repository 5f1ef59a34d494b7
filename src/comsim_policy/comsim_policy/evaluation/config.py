"""What closed-loop evaluation is asked; config/evaluation.yaml is the one place its defaults
live (`load_config` lays a user's partial file over it)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from comsim_core.config import load_config as load_dataclass
from comsim_core.errors import UserError, load_yaml
from comsim_core.paths import resolve_config_path

DEFAULTS = 'config/evaluation.yaml'
SECTION = 'evaluation'
MODES = ('in_process', 'dds')


@dataclass(frozen=True)
class EvaluationConfig:
    mode: str               # in_process | dds
    tasks: list[str]
    rollouts: int           # per task x region x variant
    regions: list[str]
    variants: list[str]     # '' or 'default' = the task's objects
    out: str
    seed: int
    sheets: int
    saved_episodes: int     # in_process: the first N rollouts of each cell as episodes; -1 all
    check_every_s: float
    settle_s: float
    lab: dict[str, Any]     # bench_lab parameter overrides
    policy: dict[str, Any]  # policy node parameter overrides
    # dds
    timeout_s: float        # per rollout, sim seconds
    # in_process
    workers: int            # 0 = one per core
    env: str                # module:Class of the environment
    lab_params: str         # the bench lab node's parameter file the environment is built from
    policy_params: str      # the policy node's parameter file the controller is built from
    latency_s: float
    add_measured_latency: bool
    timeout_factor: float
    timeout_margin_s: float
    stale_after_s: float
    # in_process: rollouts journalled in `out` by an interrupted run (same weights, settings
    # and seeds) are kept instead of run again (evaluation/journal.py)
    resume: bool = False

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise UserError(f'evaluation: mode {self.mode!r} is not one of {list(MODES)}')
        if self.saved_episodes < -1:
            raise UserError(f'evaluation: saved_episodes: expected -1 (all) or a count >= 0, '
                            f'got {self.saved_episodes}')


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


def node_parameters(path: str, node: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """A node's `ros__parameters` from its parameter file, with `overrides` over them."""
    try:
        data = load_yaml(resolve_config_path(path), f'{node} parameters')
    except FileNotFoundError as exc:
        raise UserError(f'evaluation: {node} parameter file: {exc}') from None
    try:
        params = data[node]['ros__parameters']
    except (KeyError, TypeError):
        raise UserError(f'{path}: expected {node}: ros__parameters: {{...}}') from None
    return {**params, **overrides}
