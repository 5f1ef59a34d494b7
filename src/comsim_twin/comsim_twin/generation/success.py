"""Twin-side success: the registry task's own check (comsim_core.tasks, the one the bench lab
runs), fed with the object states the twin backend reports.

The twin cannot ask the lab whether an episode succeeded, so it runs the same rules on its own
physics; update() sees every control tick because some goals are a history (a shake), not a
final state.
"""
from __future__ import annotations

from typing import Any, Mapping

from comsim_core.tasks.registry import get_task
from comsim_core.tasks.state import ObjectState
from comsim_core.tasks.task import Verdict
from comsim_twin.scene import TwinObject


class SuccessMonitor:
    """Per-episode success of one task: update() each control tick, check() at the end."""

    def __init__(self, task: str, objects: dict[str, TwinObject], target: dict,
                 params: Mapping[str, Any] | None = None, table_z: float = 0.0):
        self.task = get_task(task)
        self.objects, self.target, self.table_z = objects, target, table_z
        self.params = dict(params or {})
        self.history = self.task.history(self.params)

    def _states(self, states: dict[str, dict]) -> dict[str, ObjectState]:
        return {n: ObjectState.from_dict(states[n]) for n in self.task.objects}

    def update(self, states: dict[str, dict]) -> None:
        self.history.update(self._states(states), self.table_z)

    def check(self, states: dict[str, dict]) -> Verdict:
        return self.task.check(self._states(states), self.objects, self.target, self.params,
                               self.history, self.table_z)
