"""ScriptedExpert: solves the bench tasks from ground-truth task state, like a varied human demo.

It runs a task program (``programs.py``: built-in per task, or one given) whose primitives
(``primitives.py``) expand into Cartesian keyframes; ``WaypointTrajectory`` turns those into a
smooth joint trajectory with RobotModel.ik. Seeded human-like variation: overall speed, curved
transit paths through random via-points, short pauses and small grasp offsets.
"""
from __future__ import annotations

import numpy as np

from comsim_core.control.waypoints import WaypointTrajectory
from comsim_core.robot.model import RobotModel
from comsim_core.tasks.programs import Program, builtin_program, compile_program


class ScriptedExpert:
    """command(t, q_measured) -> full joint target at time t, or None once finished;
    window(...) -> the targets of the coming `horizon` seconds (the program's known future)."""

    def __init__(self, robot: RobotModel, task_state: dict, seed: int,
                 program: Program | None = None):
        self.robot = robot
        self.state = task_state
        self.rng = np.random.default_rng(seed)
        self.speed = float(self.rng.uniform(0.8, 1.2))
        self.program = program or builtin_program(str(task_state.get('task')))
        self._traj: WaypointTrajectory | None = None

    @property
    def duration(self) -> float | None:
        return None if self._traj is None else self._traj.duration

    def _plan(self, q_measured: np.ndarray) -> WaypointTrajectory:
        if self._traj is None:
            frames = compile_program(self.program, self.robot, self.state, self.rng, self.speed)
            self._traj = WaypointTrajectory(self.robot, np.asarray(q_measured, float), frames)
        return self._traj

    def command(self, t: float, q_measured: np.ndarray) -> np.ndarray | None:
        traj = self._plan(q_measured)
        if t > traj.duration:
            return None
        return traj.sample(t)

    def window(self, t: float, q_measured: np.ndarray, horizon: float,
               dt: float) -> np.ndarray | None:
        """Targets at t, t + dt, ... up to t + horizon (n, joints), the last one at or past the
        end of the demonstration holding its final pose, and never fewer than two (a
        joint_trajectory_controller rejects a goal that ends at its own stamp); None once
        finished."""
        traj = self._plan(q_measured)
        if t > traj.duration:
            return None
        n = int(np.ceil(min(horizon, traj.duration - t) / dt - 1e-9)) + 1
        return np.stack([traj.sample(min(t + i * dt, traj.duration)) for i in range(max(n, 2))])
