"""One generated episode: build the randomised scene, run the program at the control rate
through the twin's physics, record joint states / images / commands, check success.

Timing follows the lab: position commands at `control_hz` (as the teleop node sends them),
camera frames at `camera_hz` and joint states at `joint_state_hz`, all scheduled on physics
steps of sim time; after the program ends the last command is held for `settle_s`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from comsim_core.robot.model import RobotModel
from comsim_core.tasks.expert import ScriptedExpert
from comsim_core.tasks.programs import Program
from comsim_core.tasks.registry import get_task
from comsim_twin.backends.base import scale_lights
from comsim_twin.backends.mjcf import bottle_neck
from comsim_twin.generation.config import GenerationConfig
from comsim_twin.generation.randomise import Randomised
from comsim_twin.generation.success import SuccessMonitor
from comsim_twin.generation.writer import T0_NS, GeneratedEpisodeWriter
from comsim_twin.scene import TwinScene

OBJECT_SETTLE_S = 0.1


@dataclass
class EpisodeOutcome:
    success: bool
    reason: str
    sim_duration_s: float          # program + settle
    program_duration_s: float
    frames: int
    final_states: dict[str, dict]


def twin_task_state(scene: TwinScene, states: dict[str, dict], target: dict,
                    seed: int) -> dict[str, Any]:
    """The task-state dict the programs read (same layout as the lab's ground truth), here
    from the twin's own scene and physics."""
    objects = {}
    for name in get_task(scene.task).objects:
        o = scene.objects[name]
        entry = {'pos': np.asarray(states[name]['pos'], float).tolist(),
                 'quat': np.asarray(states[name]['quat'], float).tolist(),
                 'shape': o.shape, 'size': list(o.size[:3] if o.shape == 'box' else o.size[:2]),
                 'color': list(o.color)}
        if o.shape == 'bottle':
            entry['neck'] = list(bottle_neck(o))
        objects[name] = entry
    return {'task': scene.task, 'seed': int(seed), 'table_z': 0.0, 'objects': objects,
            'target': dict(target)}


def _plain_states(states: dict[str, dict]) -> dict[str, dict]:
    return {n: {k: np.asarray(v, float).round(5).tolist() for k, v in s.items()}
            for n, s in states.items()}


def run_episode(backend, rnd: Randomised, program: Program | None, seed: int,
                cfg: GenerationConfig, writer: GeneratedEpisodeWriter | None = None,
                robot: RobotModel | None = None) -> EpisodeOutcome:
    """Run one episode on a (fresh or reused) backend; writes through `writer` when given."""
    scene = rnd.scene
    backend.build(scene)
    scale_lights(backend, rnd.light_scale)
    robot = robot or getattr(backend, 'robot', None) or RobotModel.load(scene.robot_model or None)
    dt = float(backend.timestep)
    backend.step(max(1, round(OBJECT_SETTLE_S / dt)))     # objects come to rest on the table
    states = backend.object_states()
    task_state = twin_task_state(scene, states, rnd.target, seed)
    expert = ScriptedExpert(robot, task_state, seed, program)
    task_objects = {n: scene.objects[n] for n in get_task(scene.task).objects}
    monitor = SuccessMonitor(scene.task, task_objects, rnd.target, cfg.task(scene.task))
    n_ctrl = max(1, round(1.0 / (cfg.control_hz * dt)))
    n_js = max(1, round(1.0 / (cfg.joint_state_hz * dt)))
    cam_period = 1.0 / (cfg.camera_hz * dt)
    settle = round(cfg.settle_s / dt)
    max_k = round(cfg.max_s / dt)
    cameras = list(scene.cameras) if writer is not None else []
    k, frame, end_k = 0, 0, None
    last_cmd = None
    prev_q, prev_t = backend.joint_positions(), 0
    while True:
        if end_k is not None and k >= end_k + settle or k >= max_k:
            break
        t_ns = T0_NS + round(k * dt * 1e9)
        if k % n_js == 0 and writer is not None:
            q = backend.joint_positions()
            dq = (q - prev_q) / ((k - prev_t) * dt) if k > prev_t else np.zeros_like(q)
            writer.joint_state(t_ns, q, dq)
            prev_q, prev_t = q, k
        if k >= round(frame * cam_period):
            for cam in cameras:
                writer.image(t_ns, cam, backend.render(cam))
            frame += 1
        if k % n_ctrl == 0:
            s = backend.object_states()
            monitor.update(s)
            if end_k is None:
                cmd = expert.command(k * dt, backend.joint_positions())
                if cmd is None:
                    end_k = k
                else:
                    last_cmd = cmd
                    backend.command_positions(cmd)
                    if writer is not None:
                        writer.command(t_ns, cmd, 0.0)   # the twin applies it at once
        nxt = min((k // n_ctrl + 1) * n_ctrl, (k // n_js + 1) * n_js,
                  max(k + 1, round(frame * cam_period)))
        backend.step(nxt - k)
        k = nxt
    if last_cmd is not None:
        backend.command_positions(last_cmd)
    final = backend.object_states()
    ok, reason = monitor.check(final)
    program_s = (end_k if end_k is not None else k) * dt
    if end_k is None:
        ok, reason = False, f'program did not finish within max_s={cfg.max_s} s'
    return EpisodeOutcome(ok, reason, k * dt, program_s, frame, _plain_states(final))
