"""Diffusion Policy inference latency per action chunk (median, p95), eager vs faster paths.

    .venv/bin/python bench/policy_inference.py [--reps 40] [--threads 1] [--compile]
        [--configs config/policy_train.yaml ...] [--out bench/results/policy_inference.json]

Each config gets two cameras at 240x320 (the real robot's size) and random weights (latency does
not depend on training); a call is a full ``PolicyRunner.predict`` (resize, crop, encode, DDIM,
unnormalise) on a fresh observation every time, as on the robot, where consecutive chunk
requests share no frame. Variants, all in this process on the same weights:

- ``eager``: the plain path as it was, ``DiffusionPolicyModel.sample`` with NCHW images
  (``PolicyRunner(fast=False)``, encoders forced to NCHW) -- the baseline;
- ``eager_nhwc``: the plain path as it is now (encoders on channels-last images on a CPU);
- ``fast``: the default runner, ``model.fast.FastSampler`` (UNet convs as im2col + packed
  matrix products, FiLM scale/bias for every DDIM step computed once per chunk; NHWC images);
- ``compile`` (``--compile``; CUDA graphs on a GPU): ``inference.optimize`` on the plain path.

The machine is shared and noisy, so the variants are interleaved call by call (round robin,
rotating the order each round) rather than measured one after the other; ratios are eager's
median / the variant's median.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch
from provenance import add_out_argument, torch_machine, write_result

from comsim_core.robot.model import RobotModel
from comsim_policy.config import PolicyConfig
from comsim_policy.inference import PolicyRunner, default_device, optimize
from comsim_policy.model.policy import DiffusionPolicyModel
from comsim_policy.normalizer import PolicyNormalizer

ROOT = Path(__file__).resolve().parents[1]
CPU_CONFIGS = ['config/policy_train.yaml', 'config/policy_train_main_job.yaml']
GPU_CONFIGS = ['config/policy_train_gpu.yaml']


def observations(cfg: PolicyConfig, n: int, seed: int = 0) -> list[tuple[dict, np.ndarray]]:
    rng = np.random.default_rng(seed)
    # joint states about the arm's home pose (an end-effector chunk's IK starts from them)
    home = RobotModel.load(cfg.robot_model or None).home[:len(cfg.joint_names)]
    return [({c: rng.integers(0, 255, (cfg.n_obs_steps, 240, 320, 3), dtype=np.uint8)
              for c in cfg.camera_topics},
             home + 0.02 * rng.normal(size=(cfg.n_obs_steps, len(cfg.joint_names))))
            for _ in range(n)]


def motions(cfg: PolicyConfig, rng: np.random.Generator) -> np.ndarray:
    """64 states or actions for the normaliser: joint angles, or tool poses on the table in
    reach (x, y, z, yaw, gripper), so that an end-effector chunk's IK converges."""
    if cfg.action_space != 'end_effector':
        return rng.normal(size=(64, cfg.action_dim))
    return rng.uniform([0.30, -0.15, 0.03, -0.5, 0.0], [0.45, 0.15, 0.12, 0.5, 0.04], (64, 5))


def build(cfg: PolicyConfig, device: torch.device, compile_: bool) -> dict[str, PolicyRunner]:
    torch.manual_seed(0)
    model = DiffusionPolicyModel(cfg)
    rng = np.random.default_rng(0)
    model.normalizer = PolicyNormalizer.fit(motions(cfg, rng), motions(cfg, rng))
    state = model.state_dict()

    def runner(fast: bool, nchw: bool = False) -> PolicyRunner:
        m = DiffusionPolicyModel(cfg)
        m.load_state_dict(state)
        if nchw:
            encode = m.encode
            m.encode = lambda im, st, memory_format=None: encode(im, st, torch.contiguous_format)
        return PolicyRunner(m, device, fast=fast)

    runners = {'eager': runner(False, nchw=True)}
    if device.type == 'cpu':
        runners['eager_nhwc'] = runner(False)
        runners['fast'] = runner(True)
    if compile_:
        name = 'cuda_graphs' if device.type == 'cuda' else 'compile'
        runners[name] = optimize(runner(False), name)
    return runners


def measure(runners: dict[str, PolicyRunner], obs: list, reps: int, warmup: int) -> dict:
    """Interleaved timings: every round calls each runner once, in a rotated order."""
    names = list(runners)
    first = {}
    for name, r in runners.items():
        t0 = time.perf_counter()
        for k in range(warmup):
            r.predict(*obs[k % len(obs)])
        first[name] = time.perf_counter() - t0
    # same inputs and seed for every variant: how far they are from the eager reference
    ref = runners['eager'].predict(*obs[0], seed=0)
    diff = {n: float(np.abs(r.predict(*obs[0], seed=0) - ref).max()) for n, r in runners.items()}
    times: dict[str, list[float]] = {n: [] for n in names}
    sync = next(iter(runners.values())).device.type == 'cuda'
    for k in range(reps):
        order = names[k % len(names):] + names[:k % len(names)]
        for name in order:
            if sync:
                torch.cuda.synchronize()
            t = time.perf_counter()
            runners[name].predict(*obs[(k + 1) % len(obs)])
            if sync:
                torch.cuda.synchronize()
            times[name].append(time.perf_counter() - t)
    out = {}
    base = float(np.median(times['eager']))
    for name in names:
        ms = np.asarray(times[name]) * 1000
        out[name] = {'median_ms': round(float(np.median(ms)), 2),
                     'p95_ms': round(float(np.percentile(ms, 95)), 2),
                     'max_ms': round(float(ms.max()), 2),
                     'speedup_vs_eager': round(base / float(np.median(times[name])), 2),
                     'max_abs_action_diff_vs_eager': diff[name],
                     'warmup_s': round(first[name], 2), 'reps': reps}
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--reps', type=int, default=40)
    p.add_argument('--threads', type=int, default=1)
    p.add_argument('--compile', action='store_true', help='also measure torch.compile')
    p.add_argument('--configs', nargs='+', default=None,
                   help=f'default: {CPU_CONFIGS} (+ {GPU_CONFIGS} on a GPU)')
    add_out_argument(p, __file__)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    device = default_device()
    configs = args.configs or CPU_CONFIGS + (GPU_CONFIGS if device.type == 'cuda' else [])
    results = []
    for path in configs:
        cfg = PolicyConfig.from_yaml(ROOT / path)
        cfg.camera_sizes = {c: [240, 320] for c in cfg.camera_topics}
        runners = build(cfg, device, args.compile)
        rows = measure(runners, observations(cfg, 8), args.reps, 3)
        for name, stats in rows.items():
            row = {'config': path, 'variant': name, 'device': str(device),
                   'ddim_steps': cfg.scheduler.num_inference_steps,
                   'params_M': round(sum(q.numel() for q in runners['eager'].model.parameters())
                                     / 1e6, 2),
                   'image_size': cfg.image_size, 'crop_size': cfg.crop_size, **stats}
            print(json.dumps(row), flush=True)
            results.append(row)
    write_result(args.out, {'results': results}, torch_machine(cpu=_cpu_name()))
    return 0


def _cpu_name() -> str:
    try:
        for line in Path('/proc/cpuinfo').read_text().splitlines():
            if line.startswith('model name'):
                return line.split(':', 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


if __name__ == '__main__':
    sys.exit(main())
