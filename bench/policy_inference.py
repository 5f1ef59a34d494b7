"""Diffusion Policy inference latency per action chunk (median, p95).

    .venv/bin/python bench/policy_inference.py [--reps 20] [--threads 1] [--compile]

Configs: the default CPU config (config/policy_train.yaml) and the GPU/paper-size config
(config/policy_train_gpu.yaml), both fed two cameras at 240x320 (the real robot's size), with
random weights (latency does not depend on training). Eager vs torch.compile (CUDA graphs on a
GPU). Writes bench/results/policy_inference.json with the command and machine.
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

from comsim_policy.config import PolicyConfig
from comsim_policy.inference import PolicyRunner, default_device, optimize
from comsim_policy.model.policy import DiffusionPolicyModel

ROOT = Path(__file__).resolve().parents[1]


def measure(runner: PolicyRunner, reps: int, warmup: int) -> dict:
    cfg = runner.config
    rng = np.random.default_rng(0)
    imgs = {c: rng.integers(0, 255, (cfg.n_obs_steps, 240, 320, 3), dtype=np.uint8)
            for c in cfg.camera_topics}
    state = rng.normal(size=(cfg.n_obs_steps, len(cfg.joint_names)))
    t0 = time.perf_counter()
    for _ in range(warmup):
        runner.predict(imgs, state)
    first = time.perf_counter() - t0
    times = []
    for _ in range(reps):
        if runner.device.type == 'cuda':
            torch.cuda.synchronize()
        t = time.perf_counter()
        runner.predict(imgs, state)
        if runner.device.type == 'cuda':
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    ms = np.asarray(times) * 1000
    return {'median_ms': round(float(np.median(ms)), 2),
            'p95_ms': round(float(np.percentile(ms, 95)), 2), 'reps': reps,
            'warmup_s': round(first, 2)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--reps', type=int, default=20)
    p.add_argument('--threads', type=int, default=1)
    p.add_argument('--compile', action='store_true', help='also measure the compiled variant')
    p.add_argument('--configs', nargs='+', default=['config/policy_train.yaml',
                                                    'config/policy_train_gpu.yaml'])
    p.add_argument('--out', type=Path, default=ROOT / 'bench/results/policy_inference.json')
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    device = default_device()
    results = []
    for path in args.configs:
        cfg = PolicyConfig.from_yaml(ROOT / path)
        cfg.camera_sizes = {c: [240, 320] for c in cfg.camera_topics}
        torch.manual_seed(0)
        model = DiffusionPolicyModel(cfg)
        variants = [('eager', None)]
        if args.compile:
            variants.append(('cuda_graphs' if device.type == 'cuda' else 'compile',
                             'cuda_graphs' if device.type == 'cuda' else 'compile'))
        for name, mode in variants:
            runner = PolicyRunner(DiffusionPolicyModel(cfg), device)
            runner.model.load_state_dict(model.state_dict())
            if mode:
                optimize(runner, mode)
            row = {'config': path, 'variant': name, 'device': str(device),
                   'ddim_steps': cfg.scheduler.num_inference_steps,
                   'params_M': round(sum(p.numel() for p in model.parameters()) / 1e6, 2),
                   'image_size': cfg.image_size, 'crop_size': cfg.crop_size,
                   **measure(runner, args.reps, 3 if mode else 2)}
            print(json.dumps(row), flush=True)
            results.append(row)
    out = {'command': ' '.join([Path(sys.executable).name, *sys.argv]),
           'machine': {'platform': platform.platform(), 'python': platform.python_version(),
                       'cpu_threads': torch.get_num_threads(), 'torch': torch.__version__,
                       'gpu': torch.cuda.get_device_name() if torch.cuda.is_available()
                       else None},
           'results': results}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == '__main__':
    sys.exit(main())
