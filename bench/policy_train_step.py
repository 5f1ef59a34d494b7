"""One training step of the shipped policy recipe: torch threads, optimiser kernels, precision.

    .venv/bin/python bench/policy_train_step.py [--steps 20] [--threads 1 2] [--bf16]

Times forward, backward, gradient clipping, AdamW and the EMA update on a synthetic batch at the
recipe's sizes (config/policy_train.yaml: two 240x320 cameras cropped to 90x120, two observation
steps, batch 32), no data loading. Variants: AdamW and EMA as they were (per-tensor ops; the
baseline), and fused AdamW with the foreach EMA (``comsim_policy.training.train``), each at
every thread count given; with ``--bf16`` also the fused step with the forward pass in bfloat16
autocast (``train.autocast: bf16``; on a CPU it pays where the cores have bf16 instructions).
The variants alternate within a round so drift on a shared machine hits all alike.
"""
from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time

import torch
from provenance import ROOT, add_out_argument, torch_machine, write_result

from comsim_policy.config import PolicyConfig
from comsim_policy.model.policy import DiffusionPolicyModel
from comsim_policy.schedulers import train_scheduler
from comsim_policy.training.train import optimisation_step, policy_ema, policy_optimizer


def variant(model: DiffusionPolicyModel, fused: bool):
    """(optimizer, ema) as training builds them (fused) or with the per-tensor kernels."""
    ema = policy_ema(copy.deepcopy(model), 0.995, 50)
    if fused:
        return policy_optimizer(model, 1e-3, 1e-6), ema
    ema.foreach = False
    return torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-6), ema


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--steps', type=int, default=20, help='timed steps per variant and round')
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--threads', type=int, nargs='+', default=[1, 2])
    ap.add_argument('--bf16', action='store_true', help='also time bfloat16 autocast')
    add_out_argument(ap, __file__)
    args = ap.parse_args()
    cfg = PolicyConfig.from_yaml(ROOT / 'config/policy_train.yaml')
    cfg.camera_sizes = {t: [240, 320] for t in cfg.camera_topics}
    torch.manual_seed(0)
    model = DiffusionPolicyModel(cfg)
    sched = train_scheduler(cfg.scheduler)
    b, h, w = cfg.train.batch_size, *cfg.crop_size
    batch = {'images': {k: torch.randint(0, 255, (b, cfg.n_obs_steps, 3, h, w),
                                         dtype=torch.uint8) for k in cfg.camera_keys},
             'state': torch.randn(b, cfg.n_obs_steps, cfg.state_dim),
             'action': torch.randn(b, cfg.horizon, cfg.action_dim)}
    variants = {'per_tensor': (*variant(model, False), None),
                'fused': (*variant(model, True), None)}
    if args.bf16:
        variants['fused_bf16'] = (*variant(model, True), torch.bfloat16)

    def step(opt, ema, autocast) -> None:
        optimisation_step(model, batch, sched, opt, ema, autocast)

    ms: dict[str, list[float]] = {}
    for threads in args.threads:
        torch.set_num_threads(threads)
        for name, (opt, ema, autocast) in variants.items():     # warm-up
            for _ in range(3):
                step(opt, ema, autocast)
        for _ in range(args.rounds):
            for name, (opt, ema, autocast) in variants.items():
                t = time.perf_counter()
                for _ in range(args.steps):
                    step(opt, ema, autocast)
                ms.setdefault(f'{name}_{threads}t', []).append(
                    (time.perf_counter() - t) / args.steps * 1000)
    result = {k: round(statistics.median(v), 1) for k, v in ms.items()}
    base = result[f'per_tensor_{args.threads[0]}t']
    ratios = {k: round(base / v, 2) for k, v in result.items()}
    out = {'batch_size': b, 'step_ms_median': result, 'speed_vs_per_tensor_'
           f'{args.threads[0]}_thread': ratios, 'rounds': args.rounds, 'steps': args.steps}
    print(json.dumps(out, indent=1))
    write_result(args.out, out, torch_machine())
    return 0


if __name__ == '__main__':
    sys.exit(main())
