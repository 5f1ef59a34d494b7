"""Task: everything one bench task is, in one value: its objects, how a layout is drawn, its
built-in program, its success check and what the twin's generation needs. Each task module
(stack_blocks.py, ...) defines one; registry.py finds them by name. The bench lab and the
twin's generation both run these functions, so a task's rules exist once.

Checks are pure functions of object states, plus a History for goals that are a history
rather than a final state (a shake); History.update sees every tracking tick.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Protocol

import numpy as np

from comsim_core.tasks.bodies import Body
from comsim_core.tasks.layout import Layout, Region
from comsim_core.tasks.markers import TableMarker
from comsim_core.tasks.state import States

Params = Mapping[str, Any]          # the task's section of the lab or generation config
Verdict = tuple[bool, str]          # success and a one-line reason


class History(Protocol):
    def update(self, states: States, table_z: float) -> None:
        """Called every tracking tick of an episode (the lab: 5 physics steps; the twin: each
        control tick)."""


class NoHistory:
    """For tasks whose goal is a final state."""

    def update(self, states: States, table_z: float) -> None:
        pass


def _no_history(params: Params) -> History:
    return NoHistory()


def _no_markers(params: Params) -> tuple[TableMarker, ...]:
    return ()


def _no_marker_poses(target: Mapping[str, Any]) -> dict[str, tuple[float, float, float]]:
    return {}


def _no_path(layout: Layout) -> None:
    return None


LayoutFn = Callable[[np.random.Generator, Region, Params, Mapping[str, Body]], Layout]
CheckFn = Callable[[States, Mapping[str, Body], Mapping[str, Any], Params, History, float],
                   Verdict]


@dataclass(frozen=True)
class Task:
    name: str
    objects: tuple[str, ...]                  # the task's objects, by name
    goal: str                                 # one line, for an LLM asked to write a program
    program: tuple[dict[str, Any], ...]       # built-in program steps (programs.py data)
    layout: LayoutFn                          # (rng, region, params, bodies) -> Layout
    check: CheckFn             # (states, bodies, target, params, history, table_z) -> Verdict
    history: Callable[[Params], History] = _no_history
    markers: Callable[[Params], tuple[TableMarker, ...]] = _no_markers
    marker_poses: Callable[[Mapping[str, Any]],
                           dict[str, tuple[float, float, float]]] = _no_marker_poses
    # a straight path (start, end) on the table the program sweeps: kept free of distractors
    clear_path: Callable[[Layout], tuple[np.ndarray, np.ndarray] | None] = _no_path
