"""Task name -> Task class. New tasks register here."""
from __future__ import annotations

from comsim_bench_lab.config import TaskConfig
from comsim_bench_lab.tasks.base import Task
from comsim_bench_lab.tasks.move_card import MoveCard
from comsim_bench_lab.tasks.shake_bottle import ShakeBottle
from comsim_bench_lab.tasks.stack_blocks import StackBlocks

TASK_CLASSES: dict[str, type[Task]] = {
    cls.name: cls for cls in (StackBlocks, MoveCard, ShakeBottle)}


def make_task(cfg: TaskConfig) -> Task:
    if cfg.name not in TASK_CLASSES:
        raise ValueError(f'unknown task {cfg.name!r} in the lab config; '
                         f'implemented: {sorted(TASK_CLASSES)}')
    return TASK_CLASSES[cfg.name](cfg)
