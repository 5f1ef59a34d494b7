"""The bench lab as an in-process evaluation environment (comsim_policy's `Environment`).

Same lab, hidden realism profile and cameras as the bench lab node, without ROS: the evaluator
runs the policy in the "real" lab, stepping it itself. Built from the node's parameters
(config/bench_lab.yaml's `ros__parameters`, with overrides); the ones only the node's
publishing loop uses (rates of cameras, clock, topics other than the cameras') are ignored.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from comsim_bench_lab.config import LabConfig
from comsim_bench_lab.lab import BenchLab
from comsim_bench_lab.realism import RealismProfile
from comsim_core.paths import resolve_config_path
from comsim_core.tasks.expert import ScriptedExpert

DEFAULTS = {'lab_config': 'config/bench_lab/lab.yaml',
            'realism_profile': 'config/bench_lab/realism.yaml',
            'joint_state_rate_hz': 200.0, 'camera_topic_prefix': '/cameras'}


class BenchLabEnvironment:
    def __init__(self, params: dict[str, Any]):
        p = {**DEFAULTS, **params}
        realism = (RealismProfile.load(resolve_config_path(p['realism_profile']))
                   if p['realism_profile'] else None)
        self.lab = BenchLab(LabConfig.load(resolve_config_path(p['lab_config'])), realism)
        self.joint_names = list(self.lab.joint_names)
        prefix = str(p['camera_topic_prefix'])
        self._camera = {f'{prefix}/{c}/image_raw': c for c in self.lab.camera_names}
        self.camera_topics = list(self._camera)
        self.camera_sizes = {t: (self.lab.config.cameras[c].height,
                                 self.lab.config.cameras[c].width)
                             for t, c in self._camera.items()}
        self.timestep = float(self.lab.timestep)
        # the node sets the follower's target before each joint-state publication
        self.command_period = 1.0 / float(p['joint_state_rate_hz'])

    @property
    def time(self) -> float:
        return float(self.lab.data.time)

    def reset(self, task: str, seed: int, region: str, variant: str) -> None:
        self.lab.reset(task, int(seed), region, variant or None)
        self.lab.reseed_sensors(seed)   # a rollout must not depend on earlier renders

    def joint_state(self) -> tuple[np.ndarray, np.ndarray]:
        pos, vel, _ = self.lab.joint_state()
        return pos, vel

    def render(self, camera_topic: str) -> np.ndarray:
        return self.lab.render(self._camera[camera_topic])

    def command_positions(self, q: np.ndarray) -> None:
        self.lab.command_positions(q)

    def step(self, n: int) -> None:
        self.lab.step(n)

    def check_success(self) -> tuple[bool, str]:
        ok, why = self.lab.check_success()
        return bool(ok), why

    def object_poses(self) -> dict[str, np.ndarray]:
        return {name: np.array([*o['pos'], *o['quat']])
                for name, o in self.lab.task_state()['objects'].items()}

    def expert(self, seed: int) -> ScriptedExpert:
        """The scripted expert for the layout just reset (the demonstrations' planner)."""
        return ScriptedExpert(self.lab.robot, self.lab.task_state(), int(seed))

    def expert_duration(self, task: str, seed: int, region: str, variant: str) -> float:
        self.reset(task, seed, region, variant)
        expert = self.expert(seed)
        expert.command(0.0, self.joint_state()[0])   # plans the whole program
        return float(expert.duration)

    def close(self) -> None:
        self.lab.close()
