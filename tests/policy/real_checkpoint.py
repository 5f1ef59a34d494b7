"""Helpers (no tests): tiny untrained checkpoints in the trainer's on-disk format.

`write_checkpoint` saves a real `DiffusionPolicyModel` with `save_pretrained` (config.yaml +
model.safetensors, normaliser stats inside), small enough that the real `PolicyRunner` loads
and predicts in milliseconds on a CPU. Two variants break it the ways a trained policy can:
`nan=True` sets the UNet's output bias to NaN in the safetensors (every action is NaN), and
`action_range` widens the action normaliser so denormalised actions land far outside the
robot's joint limits. `StallingRunner` is the real runner with one prediction made slow;
`ImageSavingRunner` saves the first camera images the node hands it (to check decoding).
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import save_file

from comsim_core.robot.model import RobotModel
from comsim_policy.checkpoint import WEIGHTS, save_pretrained
from comsim_policy.config import ModelConfig, PolicyConfig, SchedulerConfig
from comsim_policy.inference import PolicyRunner
from comsim_policy.model.policy import DiffusionPolicyModel
from comsim_policy.normalizer import PolicyNormalizer

OUTPUT_BIAS = 'unet.final.1.bias'


def tiny_policy_config(cameras, size) -> PolicyConfig:
    """The smallest UNet/encoder the model builds, on the robot's joints at 10 Hz."""
    return PolicyConfig(joint_names=RobotModel.load().joint_names, camera_topics=list(cameras),
                        camera_sizes={c: list(size) for c in cameras},
                        image_size=list(size), crop_size=[size[0] - 4, size[1] - 4],
                        n_obs_steps=2, horizon=8, n_action_steps=4, control_hz=10.0,
                        model=ModelConfig(down_dims=[8, 16], kernel_size=3, n_groups=2,
                                          diffusion_step_embed_dim=8, vision_width=4,
                                          num_keypoints=4),
                        scheduler=SchedulerConfig(num_inference_steps=4))


def write_checkpoint(path: Path, cameras, size, nan: bool = False,
                     action_range: float | None = None, unreachable: bool = False) -> Path:
    """A checkpoint dir; actions span the robot's limits unless `action_range` (rad) widens
    them to [-range, range] (outputs then exceed the limits). `unreachable`: an end-effector
    policy whose every tool position lies 2-3 m in front of the robot."""
    torch.manual_seed(0)
    robot = RobotModel.load()
    cfg = tiny_policy_config(cameras, size)
    if unreachable:     # tool x, y, z, yaw, gripper
        cfg.action_space = 'end_effector'
        states = np.array([[0.2, -0.3, 0.0, -3.0, 0.0], [0.6, 0.3, 0.3, 3.0, 0.04]])
        actions = states + [2.0, 0, 0, 0, 0]
    else:
        states = np.stack([robot.lower, robot.upper])
        actions = states if action_range is None else \
            np.stack([np.full_like(robot.lower, -action_range),
                      np.full_like(robot.upper, action_range)])
    model = DiffusionPolicyModel(cfg)
    model.normalizer = PolicyNormalizer.fit(states, actions)
    save_pretrained(model, path)
    if nan:
        weights = path / WEIGHTS
        with safe_open(str(weights), 'pt') as f:
            metadata = f.metadata()
            tensors = {k: f.get_tensor(k) for k in f.keys()}
        tensors[OUTPUT_BIAS] = torch.full_like(tensors[OUTPUT_BIAS], float('nan'))
        save_file(tensors, str(weights), metadata=metadata)
    return path


class StallingRunner(PolicyRunner):
    """The real `PolicyRunner` whose `STALL_CALL`-th prediction (1 = the warm-up) sleeps
    `STALL_S` seconds first, set through the environment (the policy node loads it by its
    `runner_class` parameter in another process): a hung GPU or worker thread."""

    calls = 0

    def predict(self, images, state):
        StallingRunner.calls += 1
        if StallingRunner.calls == int(os.environ.get('COMSIM_TEST_STALL_CALL', '0')):
            time.sleep(float(os.environ.get('COMSIM_TEST_STALL_S', '0')))
        return super().predict(images, state)


class ImageSavingRunner(PolicyRunner):
    """The real `PolicyRunner` that saves the images of its first prediction after the warm-up
    (camera topic -> (n_obs, H, W, 3) uint8, as the node decoded them) to the .npz file named
    by ``COMSIM_TEST_SAVE_IMAGES``."""

    saved = False

    def predict(self, images, state):
        if not ImageSavingRunner.saved and any(np.any(v) for v in images.values()):
            ImageSavingRunner.saved = True
            out = os.environ['COMSIM_TEST_SAVE_IMAGES']
            np.savez(out + '.tmp.npz', **{f'cam{i}': np.asarray(images[c])
                                          for i, c in enumerate(sorted(images))})
            os.replace(out + '.tmp.npz', out)
        return super().predict(images, state)
