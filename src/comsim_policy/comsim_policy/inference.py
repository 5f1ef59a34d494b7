"""``PolicyRunner``: a trained checkpoint behind a numpy interface for the deploy node.

The runner owns everything between raw robot observations and joint targets: it checks the
robot matches the checkpoint (joint names, camera topics, native image sizes), resizes and
centre-crops images with the checkpoint's ``ImagePreprocessor`` (training's own), normalises,
runs DDIM, and unnormalises (through ``model.fast.FastSampler`` unless ``fast=False``: same
weights and maths, ~2-3x less CPU time per chunk; ``fast=False`` is the plain
``DiffusionPolicyModel.sample`` reference path). Row ``config.n_obs_steps - 1`` of the returned
sequence is the step of the latest observation; ``execute_slice`` picks the ``n_action_steps``
rows a controller should run.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch

from .action_space import action_space
from .checkpoint import from_pretrained
from .config import PolicyConfig
from .model.fast import FastSampler
from .model.policy import DiffusionPolicyModel
from .schedulers import inference_scheduler


class PolicyMismatchError(ValueError):
    """The robot's joints/cameras (or the inputs given) do not match the checkpoint."""


def default_device(device: str | torch.device | None = None) -> torch.device:
    """``device`` if given ('auto' counts as not given), else CUDA when present, else CPU."""
    if device is None or str(device) == 'auto':
        return torch.device('cuda' if torch.cuda.is_available() else 'cpu')
    return torch.device(device)


def limit_cpu_threads() -> bool:
    """One torch thread on a CPU-only machine unless ``OMP_NUM_THREADS`` says otherwise.

    The policy's ops are small; on the 2-core machine (shared with other jobs) the main-job
    config trained at 240 samples/s with one thread and 3 with two. Returns True if it limited.
    """
    if os.environ.get('OMP_NUM_THREADS') or torch.cuda.is_available():
        return False
    torch.set_num_threads(1)
    return True


class PolicyRunner:
    """Load with ``PolicyRunner.load(dir)``; call ``predict`` once per action chunk."""

    def __init__(self, model: DiffusionPolicyModel, device: str | torch.device | None = None,
                 num_inference_steps: int | None = None, fast: bool = True) -> None:
        self.device = default_device(device)
        self.model = model.to(self.device).eval()
        self.scheduler = inference_scheduler(model.config.scheduler, num_inference_steps)
        self._generator = self._new_generator(0)
        # the packed-conv path pays off on CPU; on a GPU the plain path is already fast
        self.sampler = FastSampler(self.model) if fast and self.device.type == 'cpu' else None
        cfg = model.config
        self.space = action_space(cfg.action_space, cfg.joint_names, cfg.robot_model)

    @classmethod
    def load(cls, checkpoint_dir: Path | str, device: str | torch.device | None = None,
             num_inference_steps: int | None = None, fast: bool = True) -> PolicyRunner:
        """Rebuild the policy from a checkpoint directory (``config.yaml`` + safetensors)."""
        dev = default_device(device)
        return cls(from_pretrained(checkpoint_dir, dev), dev, num_inference_steps, fast)

    @property
    def config(self) -> PolicyConfig:
        return self.model.config

    @property
    def execute_slice(self) -> slice:
        """Rows of ``predict``'s output to execute: from "now" for ``n_action_steps``."""
        start = self.config.n_obs_steps - 1
        return slice(start, start + self.config.n_action_steps)

    def reset(self) -> None:
        """Start a new episode: restart the sampling noise stream (seed 0)."""
        self._generator = self._new_generator(0)

    def _new_generator(self, seed: int) -> torch.Generator:
        return torch.Generator(device=self.device).manual_seed(int(seed))

    # ------------------------------------------------------------------ checks
    def check_compatible(self, joint_names: list[str], cameras: dict[str, tuple[int, int]]
                         ) -> None:
        """Raise PolicyMismatchError naming the first joint/camera/size that differs.

        ``cameras`` maps camera topic -> native (height, width) of its images.
        """
        cfg = self.config
        if list(joint_names) != list(cfg.joint_names):
            missing = [j for j in cfg.joint_names if j not in joint_names]
            extra = [j for j in joint_names if j not in cfg.joint_names]
            detail = (f'missing {missing}, unexpected {extra}' if missing or extra
                      else 'same joints in a different order')
            raise PolicyMismatchError(f'joint names differ from the checkpoint: robot has '
                                      f'{list(joint_names)}, policy expects {cfg.joint_names} '
                                      f'({detail})')
        missing = [c for c in cfg.camera_topics if c not in cameras]
        if missing:
            raise PolicyMismatchError(f'cameras {missing} required by the policy are not '
                                      f'available (robot has {sorted(cameras)})')
        for cam in cfg.camera_topics:
            want = cfg.camera_sizes.get(cam)
            got = [int(v) for v in cameras[cam]]
            if want is not None and list(want) != got:
                raise PolicyMismatchError(f'camera {cam}: images are {got[0]}x{got[1]} (HxW) '
                                          f'but the policy was trained on {want[0]}x{want[1]}')

    # ------------------------------------------------------------------ prediction
    def preprocess(self, images: dict[str, np.ndarray], state: np.ndarray
                   ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """Validate, resize, centre-crop; the joint state into the policy's action space;
        batch of one on the runner's device."""
        cfg = self.config
        state = np.asarray(state, dtype=np.float32)
        t_obs, n_j = cfg.n_obs_steps, len(cfg.joint_names)
        if state.shape != (t_obs, n_j):
            raise PolicyMismatchError(f'state must be (n_obs_steps={t_obs}, joints={n_j}), '
                                      f'got {state.shape}')
        out = {}
        for key, cam in zip(cfg.camera_keys, cfg.camera_topics, strict=True):
            if cam not in images:
                raise PolicyMismatchError(f'no images for camera {cam} (got {sorted(images)})')
            frames = np.asarray(images[cam])
            if frames.ndim != 4 or frames.shape[0] != t_obs or frames.shape[3] != 3 \
                    or frames.dtype != np.uint8:
                raise PolicyMismatchError(f'{cam}: images must be ({t_obs}, H, W, 3) uint8 RGB, '
                                          f'got {frames.shape} {frames.dtype}')
            want = cfg.camera_sizes.get(cam)
            if want is not None and list(frames.shape[1:3]) != list(want):
                raise PolicyMismatchError(f'{cam}: images are {frames.shape[1]}x{frames.shape[2]}'
                                          f' but the policy was trained on {want[0]}x{want[1]}')
            small = self.model.preprocessor(frames)
            tensor = torch.from_numpy(np.ascontiguousarray(small)).permute(0, 3, 1, 2)
            out[key] = tensor.unsqueeze(0).to(self.device)
        state = self.space.encode(state)
        return out, torch.from_numpy(state).unsqueeze(0).to(self.device)

    def predict(self, images: dict[str, np.ndarray], state: np.ndarray,
                seed: int | None = None) -> np.ndarray:
        """Joint targets (horizon, J) for the window ending now.

        ``images``: camera topic -> (n_obs_steps, H, W, 3) uint8 RGB at the native size;
        ``state``: (n_obs_steps, J) joint positions, oldest first. With ``seed`` the result is
        reproducible; without, the runner's own noise stream continues (see ``reset``). An
        end-effector policy's poses come back as joint targets (IK from the latest state).
        """
        imgs, st = self.preprocess(images, state)
        gen = self._new_generator(seed) if seed is not None else self._generator
        with torch.inference_mode():
            if self.sampler is not None:
                actions = self.sampler.sample(imgs, st, self.scheduler, gen)
            else:
                actions = self.model.sample(imgs, st, self.scheduler, gen)
        return self.space.decode(actions[0].float().cpu().numpy(), np.asarray(state)[-1])


def optimize(runner: PolicyRunner, mode: str = 'compile') -> PolicyRunner:
    """Compile the UNet and image encoders in place ('compile'; 'cuda_graphs' on a GPU).

    Weights are shared, so predictions match the eager runner up to kernel rounding; do not
    save a checkpoint from an optimised model (compiled modules rename their parameters).
    The compiled modules run through ``DiffusionPolicyModel.sample``, so the runner's
    ``FastSampler`` is switched off.
    """
    if mode not in {'compile', 'cuda_graphs'}:
        raise ValueError(f'unknown optimisation {mode!r}: use compile | cuda_graphs')
    kw = {'mode': 'reduce-overhead'} if mode == 'cuda_graphs' else {}
    model = runner.model
    runner.sampler = None
    model.unet = torch.compile(model.unet, dynamic=False, **kw)
    model.encoders = torch.nn.ModuleDict({k: torch.compile(v, dynamic=False, **kw)
                                          for k, v in model.encoders.items()})
    return runner
