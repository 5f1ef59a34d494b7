"""What an in-process rollout needs of a simulated lab, so the policy package stays free of it.

The evaluator loads an implementation from a `module:Class` string (config/evaluation.yaml,
key `env`), built as `Class(params)` with the lab's parameters; the bench lab's is
`comsim_bench_lab.sim_env:BenchLabEnvironment`.
"""
from __future__ import annotations

import importlib
from typing import Any, Protocol

import numpy as np

from comsim_core.errors import UserError


class Environment(Protocol):
    joint_names: list[str]
    camera_topics: list[str]
    camera_sizes: dict[str, tuple[int, int]]   # topic -> native (height, width)
    timestep: float                           # s per physics step
    command_period: float                     # s between two position targets of the driver

    @property
    def time(self) -> float:
        """Sim seconds since the last `reset` (so a rollout's clock does not depend on what
        ran before it in the same process)."""
        ...

    def reset(self, task: str, seed: int, region: str, variant: str) -> None:
        """The layout of (task, seed, region, variant), the arm at home, holding still."""
        ...

    def joint_state(self) -> tuple[np.ndarray, np.ndarray]:
        """Measured (positions, velocities) in `joint_names` order."""
        ...

    def render(self, camera_topic: str) -> np.ndarray:
        """(H, W, 3) uint8 RGB as the camera on `camera_topic` would publish it now."""
        ...

    def command_positions(self, q: np.ndarray) -> None:
        """The driver's position target for every joint, in `joint_names` order."""
        ...

    def step(self, n: int) -> None:
        ...

    def check_success(self) -> tuple[bool, str]:
        ...

    def object_poses(self) -> dict[str, np.ndarray]:
        """Each task object's (x, y, z, qw, qx, qy, qz) now (paired arms share layouts)."""
        ...

    def expert_duration(self, task: str, seed: int, region: str, variant: str) -> float:
        """Sim seconds the scripted expert takes on this layout (rollout timeouts scale it).
        May reset the environment."""
        ...

    def close(self) -> None:
        ...


def environment_class(spec: str) -> type:
    """The class `module:Class` names; a bad name is one clear line."""
    module, _, attr = spec.partition(':')
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError, ValueError) as exc:
        raise UserError(f'evaluation: env {spec!r} is not an importable module:Class '
                        f'({exc})') from exc


def load_environment(spec: str, params: dict[str, Any]) -> Environment:
    return environment_class(spec)(dict(params))
