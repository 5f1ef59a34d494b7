"""Bench tasks: layouts from a seed, tracking, success checks (see base.Task)."""
from comsim_bench_lab.tasks.base import ObjectView, Placement, Task
from comsim_bench_lab.tasks.registry import TASK_CLASSES, make_task

__all__ = ['ObjectView', 'Placement', 'Task', 'TASK_CLASSES', 'make_task']
