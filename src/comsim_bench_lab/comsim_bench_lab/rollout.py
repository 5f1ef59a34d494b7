"""Headless expert rollout: the loop tests and benchmarks share (no rendering, no ROS)."""
from __future__ import annotations

import numpy as np

from comsim_bench_lab.lab import BenchLab
from comsim_core.robot.model import RobotModel
from comsim_core.tasks.expert import ScriptedExpert

CONTROL_PERIOD = 0.02   # s, like the 50 Hz teleop node


def run_expert_episode(lab: BenchLab, robot: RobotModel, task: str, seed: int, region: str = 'id',
                       variant: str | None = None, settle_s: float = 0.6,
                       max_s: float = 15.0) -> tuple[bool, float]:
    """Reset, let the scripted expert drive at 50 Hz, settle, check success.

    Returns (success, duration_s) where duration_s is the sim time the expert needed.
    """
    lab.reset(task, seed, region, variant)
    expert = ScriptedExpert(robot, lab.task_state(), seed)
    n = max(1, int(round(CONTROL_PERIOD / lab.timestep)))
    t = 0.0
    last = None
    while t < max_s:
        pos, _, _ = lab.joint_state()
        q = expert.command(t, pos)
        if q is None:
            break
        last = q
        lab.command_positions(q)
        lab.step(n)
        t += n * lab.timestep
    duration = t
    if last is not None:
        lab.command_positions(last)
    lab.step(int(round(settle_s / lab.timestep)))
    ok, _ = lab.check_success()
    return ok, duration


def success_rate(lab: BenchLab, robot: RobotModel, task: str, seeds: list[int], region: str = 'id',
                 variant: str | None = None) -> tuple[float, list[float]]:
    results = [run_expert_episode(lab, robot, task, s, region, variant) for s in seeds]
    return float(np.mean([ok for ok, _ in results])), [d for _, d in results]
