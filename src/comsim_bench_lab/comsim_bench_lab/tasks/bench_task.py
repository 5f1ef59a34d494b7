"""BenchTask: a registry task (comsim_core.tasks) bound to its section of the lab config,
holding the current episode's target and history. The rules (layout, success check, markers)
are the registry's, the same the twin's generation runs; the lab adds variants, regions,
the scene and its realism."""
from __future__ import annotations

from typing import Any

import numpy as np

from comsim_bench_lab.config import LabConfigError, ObjectConfig, RegionConfig, TaskConfig
from comsim_core.tasks.layout import Placement, Region
from comsim_core.tasks.markers import TableMarker
from comsim_core.tasks.registry import get_task, task_names
from comsim_core.tasks.state import States
from comsim_core.tasks.task import History, Verdict


class BenchTask:
    def __init__(self, cfg: TaskConfig):
        if cfg.name not in task_names():
            raise LabConfigError(f'unknown task {cfg.name!r} in the lab config; '
                                 f'implemented: {task_names()}')
        self.cfg = cfg
        self.rules = get_task(cfg.name)
        self.target: dict[str, Any] = {}
        self.history: History = self.rules.history(cfg.params)

    @property
    def variants(self) -> list[str]:
        return list(self.cfg.variants)

    def markers(self) -> list[TableMarker]:
        return list(self.rules.markers(self.cfg.params))

    def marker_poses(self) -> dict[str, tuple[float, float, float]]:
        """x, y, yaw of each marker for the current target (KeyError: the target lacks it)."""
        return self.rules.marker_poses(self.target)

    def reset_tracking(self) -> None:
        self.history = self.rules.history(self.cfg.params)

    def update(self, states: States, table_z: float) -> None:
        self.history.update(states, table_z)

    def sample(self, rng: np.random.Generator, region: RegionConfig,
               objects: dict[str, ObjectConfig]) -> dict[str, Placement]:
        """Initial layout of every task object inside the region; also sets the target."""
        layout = self.rules.layout(rng, Region.of(region.x, region.y), self.cfg.params, objects)
        self.target = layout.target
        return layout.placements

    def check_success(self, states: States, objects: dict[str, ObjectConfig],
                      table_z: float) -> Verdict:
        return self.rules.check(states, objects, self.target, self.cfg.params, self.history,
                                table_z)
