"""Task programs: data (a list of primitive calls) that an expert, a generator or an LLM writes.

JSON form: ``{"task": "stack_blocks", "steps": [{"primitive": "stack", "object": "block_top",
"on": "block_bottom"}]}``. ``parse_program`` validates structure, primitive names and argument
names without executing anything; ``compile_program`` expands it into keyframes for a given task
state and seed (``WaypointTrajectory`` turns those into joint targets).
"""
from __future__ import annotations

import inspect
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from comsim_core.control.waypoints import Keyframe
from comsim_core.errors import UserError
from comsim_core.robot.model import RobotModel
from comsim_core.tasks.primitives import PRIMITIVES, Planner, PrimitiveError
from comsim_core.tasks.registry import get_task


class ProgramError(UserError, ValueError):
    """A task program that is not valid data (unknown primitive, bad arguments, not JSON)."""


@dataclass(frozen=True)
class Step:
    primitive: str
    args: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {'primitive': self.primitive, **self.args}


@dataclass(frozen=True)
class Program:
    task: str
    steps: tuple[Step, ...]

    def to_dict(self) -> dict[str, Any]:
        return {'task': self.task, 'steps': [s.to_dict() for s in self.steps]}

    def to_json(self) -> str:
        return json.dumps(self.to_dict())


def _check_args(name: str, args: dict[str, Any]) -> None:
    params = inspect.signature(PRIMITIVES[name]).parameters
    allowed = [n for n in params if n != 'p']
    unknown = sorted(set(args) - set(allowed))
    if unknown:
        raise ProgramError(f'step {name}: unknown arguments {unknown}; allowed: {allowed}')
    missing = [n for n, prm in params.items() if n != 'p' and prm.default is inspect._empty
               and n not in args]
    if missing:
        raise ProgramError(f'step {name}: missing arguments {missing}')
    for key, value in args.items():
        if not isinstance(value, (str, int, float, list, type(None))) or isinstance(value, bool):
            raise ProgramError(f'step {name}: argument {key}={value!r} must be a number, '
                               f'string, list or null')


def parse_program(data: dict | str, task: str | None = None) -> Program:
    """Validate program data (dict or JSON text; never evaluated) into a Program."""
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except json.JSONDecodeError as exc:
            raise ProgramError(f'program is not valid JSON: {exc}') from exc
    if isinstance(data, list):
        data = {'task': task or '', 'steps': data}
    if not isinstance(data, dict) or not isinstance(data.get('steps'), list):
        raise ProgramError('program must be {"task": ..., "steps": [...]} or a list of steps')
    if not data['steps']:
        raise ProgramError('program has no steps')
    steps = []
    for i, raw in enumerate(data['steps']):
        if not isinstance(raw, dict) or not isinstance(raw.get('primitive'), str):
            raise ProgramError(f'step {i}: needs a "primitive" name, got {raw!r}')
        name = raw['primitive']
        if name not in PRIMITIVES:
            raise ProgramError(f'step {i}: unknown primitive {name!r}; known: {sorted(PRIMITIVES)}')
        args = {k: v for k, v in raw.items() if k != 'primitive'}
        _check_args(name, args)
        steps.append(Step(name, args))
    return Program(str(data.get('task') or task or ''), tuple(steps))


def builtin_program(task: str) -> Program:
    """The program the task module ships (raises UnknownTaskError)."""
    return parse_program({'task': task, 'steps': list(get_task(task).program)})


def compile_program(program: Program, robot: RobotModel, task_state: dict,
                    rng: np.random.Generator, speed: float = 1.0) -> list[Keyframe]:
    """Expand the program into keyframes for this task state (raises ProgramError)."""
    planner = Planner.start(robot, task_state, rng, speed)
    for i, step in enumerate(program.steps):
        try:
            PRIMITIVES[step.primitive](planner, **step.args)
        except (PrimitiveError, TypeError, KeyError, IndexError, ValueError) as exc:
            raise ProgramError(f'step {i} ({step.primitive}): {exc}') from exc
    if not planner.frames:
        raise ProgramError('program produced no motion')
    return planner.frames
