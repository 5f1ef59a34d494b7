"""Task name -> Task. A new task is one module defining a Task, listed here, plus its config
sections (the lab's `tasks.<name>`, the generation's `tasks.<name>`)."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from comsim_core.errors import UserError
from comsim_core.tasks import move_card, shake_bottle, stack_blocks
from comsim_core.tasks.task import Task

_TASKS: dict[str, Task] = {t.name: t for t in (stack_blocks.TASK, move_card.TASK,
                                                shake_bottle.TASK)}


class UnknownTaskError(UserError, ValueError):
    """A task name no task module defines."""


def task_names() -> list[str]:
    return sorted(_TASKS)


def get_task(name: str) -> Task:
    if name not in _TASKS:
        raise UnknownTaskError(f'unknown task {name!r}; known: {task_names()}')
    return _TASKS[name]


@contextmanager
def registered(task: Task) -> Iterator[Task]:
    """`task` known by name inside the block: a task defined outside this package (a test's)
    without editing the list above. Spawned worker processes do not see it."""
    if task.name in _TASKS:
        raise ValueError(f'task {task.name!r} is already registered')
    _TASKS[task.name] = task
    try:
        yield task
    finally:
        del _TASKS[task.name]
