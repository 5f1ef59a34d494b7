"""Train a Diffusion Policy on recorded episodes; resumable; EMA checkpoints.

    python -m comsim_policy.training.train --config config/policy_train.yaml \
        --data output/episodes:real output/pseudo_real:pseudo_real --out output/policy [--resume]

``--out`` becomes a loadable checkpoint directory (``PolicyRunner.load(out)``) holding the EMA
weights; ``out/best`` holds the EMA weights with the lowest validation loss; ``out/log.jsonl``
the progress. ``--resume`` continues from ``out/training_state`` with the saved config.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import torch
from diffusers.training_utils import EMAModel
from torch.utils.data import DataLoader

from comsim_core.checkpoint import write_text
from comsim_core.errors import cli_main

from ..checkpoint import (
    WEIGHTS,
    has_training_state,
    load_config,
    load_training_state,
    save_pretrained,
    save_training_state,
)
from ..config import PolicyConfig
from ..data.cache import FrameCache
from ..data.dataset import WindowDataset
from ..data.mixture import MixtureSampler
from ..inference import default_device, limit_cpu_threads
from ..model.policy import DiffusionPolicyModel
from ..normalizer import PolicyNormalizer, joint_limits
from ..schedulers import inference_scheduler, train_scheduler
from .budget import StepBudget
from .data_setup import DataSpec, PreparedData, motion, prepare, stacked


def lr_at(step: int, base: float, warmup: int, total: int) -> float:
    """Linear warm-up then cosine decay to 0 (stateless, so resuming needs no scheduler)."""
    if step < warmup:
        return base * (step + 1) / warmup
    frac = (step - warmup) / max(1, total - warmup)
    return base * 0.5 * (1 + math.cos(math.pi * min(1.0, frac)))


def policy_ema(averaged: torch.nn.Module, decay: float, warmup_steps: int) -> EMAModel:
    """The weight average that gets deployed (Chi et al.): decay ``step / (warmup + step)``
    up to ``decay`` (short memory while the weights move fast), constant without warm-up."""
    return EMAModel(averaged.parameters(), decay=decay, use_ema_warmup=warmup_steps > 0,
                    inv_gamma=max(warmup_steps, 1), power=1.0,
                    min_decay=0.0 if warmup_steps > 0 else decay, foreach=True)


def policy_optimizer(model: torch.nn.Module, lr: float, weight_decay: float
                     ) -> torch.optim.AdamW:
    """AdamW with its fused kernel: one pass over all parameters instead of a dozen small ops
    per tensor. With the foreach EMA, one step of the shipped recipe on the 2-core CPU took
    186 ms instead of 196 on two threads, 300 instead of 324 on one
    (``bench/policy_train_step.py``)."""
    return torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay, fused=True)


def optimisation_step(model: DiffusionPolicyModel, batch: dict, noise_scheduler,
                      opt: torch.optim.Optimizer, ema: EMAModel,
                      autocast: torch.dtype | None = None) -> torch.Tensor:
    """One update: the diffusion loss (forward in ``autocast`` precision when given), its
    gradient clipped to norm 1, the optimiser step, then the weight average; returns the loss."""
    device_type = batch['state'].device.type
    with torch.autocast(device_type, dtype=autocast, enabled=autocast is not None):
        loss = model.compute_loss(batch, noise_scheduler)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    ema.step(model.parameters())
    return loss


def fit_normalizer(config: PolicyConfig, data: PreparedData) -> PolicyNormalizer:
    """The [-1, 1] mapping ``config.normalization`` names (see ``normalizer``)."""
    if config.normalization == 'limits':
        return PolicyNormalizer.from_limits(*joint_limits(config.joint_names, config.robot_model))
    states, actions = stacked(data.train, 'state'), stacked(data.train, 'action')
    if config.train.normalization_data:
        more = motion([DataSpec.parse(d) for d in config.train.normalization_data], config)
        states, actions = np.concatenate([states, more[0]]), np.concatenate([actions, more[1]])
    return PolicyNormalizer.fit(states, actions)


def _to(batch: dict, device: torch.device) -> dict:
    return {'images': {k: v.to(device, non_blocking=True) for k, v in batch['images'].items()},
            'state': batch['state'].to(device), 'action': batch['action'].to(device)}


def make_loader(data: PreparedData, config: PolicyConfig, device: torch.device
                ) -> tuple[DataLoader, MixtureSampler, WindowDataset]:
    tc = config.train
    ds = WindowDataset(data.train, config, train=True, seed=tc.seed)
    sources = [data.train[e].source for e in ds.episode_of]
    sampler = MixtureSampler(sources, tc.mixture or None, num_samples=max(len(ds), tc.batch_size),
                             seed=tc.seed)
    loader = DataLoader(ds, batch_size=tc.batch_size, sampler=sampler, drop_last=True,
                        num_workers=tc.num_workers, persistent_workers=tc.num_workers > 0,
                        pin_memory=device.type == 'cuda')
    return loader, sampler, ds


def _batches(loader: DataLoader, sampler: MixtureSampler, epoch: int) -> Iterator[dict]:
    while True:
        sampler.set_epoch(epoch)
        yield from loader
        epoch += 1


@torch.no_grad()
def evaluate(model: DiffusionPolicyModel, episodes: list, config: PolicyConfig,
             device: torch.device, max_batches: int = 4) -> dict[str, float]:
    """Diffusion loss (fixed noise) and DDIM action error on held-out windows: over every
    action number (``val_action_mae``, mixed units in the end-effector space) and per named
    number (``val_action_mae_<name>``: its own unit, m for x, y, z, rad for yaw and joints).

    Also how much the sampled actions move (same noise, joint units) when each window gets
    another window's images (``val_image_sensitivity``) or joint states
    (``val_state_sensitivity``), on the first batch: a policy whose image sensitivity is ~0
    is blind, it replays trajectories from the joint states alone.
    """
    if not episodes:
        return {}
    ds = WindowDataset(episodes, config, train=False)
    g = torch.Generator().manual_seed(0)
    idx = torch.randperm(len(ds), generator=g)[: max_batches * config.train.batch_size]
    loader = DataLoader(torch.utils.data.Subset(ds, idx.tolist()),
                        batch_size=config.train.batch_size)
    sched = train_scheduler(config.scheduler)
    ddim = inference_scheduler(config.scheduler)
    losses, errs, dims = [], [], []
    sens: dict[str, float] = {}
    state = torch.random.get_rng_state()
    torch.manual_seed(1234)
    try:
        for batch in loader:
            b = _to(batch, device)
            losses.append(float(model.compute_loss(b, sched)))
            gen = torch.Generator(device=device).manual_seed(0)
            pred = model.sample(b['images'], b['state'], ddim, gen)
            err = (pred - b['action']).abs()
            errs.append(float(err.mean()))
            dims.append(err.reshape(-1, err.shape[-1]).mean(0).cpu().numpy())
            n = b['state'].shape[0]
            if not sens and n > 1:
                other = torch.roll(torch.arange(n, device=device), 1)
                for what, imgs, st in (
                        ('image', {k: v[other] for k, v in b['images'].items()}, b['state']),
                        ('state', b['images'], b['state'][other])):
                    gen = torch.Generator(device=device).manual_seed(0)
                    swapped = model.sample(imgs, st, ddim, gen)
                    sens[f'val_{what}_sensitivity'] = float((swapped - pred).abs().mean())
    finally:
        torch.random.set_rng_state(state)
    per_dim = np.mean(dims, axis=0)
    named = {f'val_action_mae_{n}': float(v)
             for n, v in zip(config.action_names, per_dim, strict=True)}
    return {'val_loss': float(np.mean(losses)), 'val_action_mae': float(np.mean(errs)),
            **named, **sens}


def logged_history(path: Path, upto: int) -> list[dict]:
    """The records a run logged up to step ``upto`` (where a resumed run takes over): its
    summary then covers the whole run, not only the part after the resume. Steps logged past
    ``upto`` by the interrupted run are run again, so they are dropped; so is a torn line."""
    records: dict[int, dict] = {}
    if path.is_file():
        for line in path.read_text(encoding='utf8').splitlines():
            try:
                record = json.loads(line)
                step = int(record['step'])
            except (ValueError, KeyError, TypeError):
                continue
            if step <= upto:
                records.setdefault(step, {}).update(record)
    return [records[k] for k in sorted(records)]


def run_config(config: PolicyConfig, out: Path | str, resume: bool = False,
               max_steps: int | None = None) -> PolicyConfig:
    """The config a run uses: the saved one when resuming (with the new step count)."""
    out = Path(out)
    if resume:
        if not has_training_state(out):
            raise FileNotFoundError(f'--resume: {out} holds no training_state to resume from')
        saved = load_config(out)
        saved.train.max_steps = config.train.max_steps
        config = saved
    if max_steps is not None:
        config.train.max_steps = max_steps
    return config


def train(config: PolicyConfig, specs: list[DataSpec], out: Path | str, resume: bool = False,
          log: Callable[[str], None] = print, max_steps: int | None = None,
          deadline: float | None = None) -> dict:
    """Run training; returns a summary (final/best losses, steps, samples/s). ``deadline``
    (a ``time.monotonic()`` time): the step count is fitted to end by then (``StepBudget``)
    instead of ``max_steps``."""
    config = run_config(config, out, resume, max_steps)
    cache = FrameCache(config.train.cache_dir or None, config)
    t0 = time.perf_counter()
    data = prepare(specs, config, cache)
    log(f'data: {data.summary} (cache hits {cache.hits}, decoded {cache.misses}) in '
        f'{time.perf_counter() - t0:.1f} s')
    budget = StepBudget(deadline, config.train.val_every) if deadline is not None else None
    return train_prepared(config, data, out, resume, log, budget=budget)


def train_prepared(config: PolicyConfig, data: PreparedData, out: Path | str,
                   resume: bool = False, log: Callable[[str], None] = print,
                   autocast: torch.dtype | None = None,
                   normalizer: PolicyNormalizer | None = None,
                   budget: StepBudget | None = None) -> dict:
    """The loop on data ``prepare`` made (``config`` from ``run_config``): what ``train`` runs,
    and what a machine without the episodes (the GPU path) runs on packed arrays, with the
    ``normalizer`` fitted where they are (default: ``fit_normalizer``). ``autocast`` (e.g.
    ``torch.bfloat16``; default: ``train.precision``) runs the forward pass in that precision.
    ``budget`` re-plans ``max_steps`` as the run goes so that it ends by its deadline."""
    out = Path(out)
    tc = config.train
    device = default_device(tc.device)
    if autocast is None and tc.precision == 'bf16':
        autocast = torch.bfloat16
    torch.manual_seed(tc.seed)
    model = DiffusionPolicyModel(config)
    if not resume:     # a resumed run loads the normaliser it was fitted with (no bag reading)
        model.normalizer = normalizer if normalizer is not None else fit_normalizer(config, data)
    model.to(device)
    opt = policy_optimizer(model, tc.lr, tc.weight_decay)
    # `ema` keeps the average; `averaged` is the model it is copied into to validate and save
    # (its buffers, the normaliser's statistics, are the trained model's: fit before training).
    averaged = copy.deepcopy(model).eval().requires_grad_(False)
    step, best, history = 0, float('inf'), []
    if resume:
        st = load_training_state(out, model, opt, device)
        from safetensors.torch import load_model  # noqa: PLC0415
        load_model(averaged, str(out / 'model.safetensors'), device=str(device))
        step, best = int(st['step']), float(st['best_val_loss'])
        history = logged_history(out / 'log.jsonl', step)
        write_text(out / 'log.jsonl', ''.join(json.dumps(r) + '\n' for r in history))
        log(f'resumed from {out} at step {step}')
    start = step
    # loop seconds of the runs this one resumes, to the last record it keeps: the logged
    # `train_s` and the summary's count the whole training, not only the part after a resume
    earlier_s = next((float(h['train_s']) for h in reversed(history) if 'train_s' in h), 0.0)
    if history and not earlier_s:
        log('the resumed log has no train_s (an older run): its earlier training time is '
            'not counted')
    ema = policy_ema(averaged, tc.ema_decay, tc.ema_warmup_steps)
    ema.optimization_step = step
    loader, sampler, ds = make_loader(data, config, device)
    sched = train_scheduler(config.scheduler)
    log(f'training {sum(p.numel() for p in model.parameters()) / 1e6:.2f} M parameters on '
        f'{device}, {len(ds)} windows, batch {tc.batch_size}, steps {step}->{tc.max_steps}')
    out.mkdir(parents=True, exist_ok=True)
    logf = (out / 'log.jsonl').open('a', encoding='utf8')
    batches = _batches(loader, sampler, epoch=step)
    window_loss, t_log, n_log = [], time.perf_counter(), 0
    first_loss = None
    t_loop = time.perf_counter()
    model.train()
    try:
        while step < tc.max_steps:
            batch = _to(next(batches), device)
            for g in opt.param_groups:
                g['lr'] = lr_at(step, tc.lr, tc.warmup_steps, tc.max_steps)
            loss = optimisation_step(model, batch, sched, opt, ema, autocast)
            step += 1
            window_loss.append(loss.item())
            n_log += tc.batch_size
            first_loss = first_loss if first_loss is not None else window_loss[0]
            record: dict = {}
            if step % tc.log_every == 0 or step == tc.max_steps:
                dt = time.perf_counter() - t_log
                record = {'step': step, 'loss': float(np.mean(window_loss)),
                          'lr': opt.param_groups[0]['lr'], 'samples_per_s': n_log / dt,
                          'train_s': earlier_s + time.perf_counter() - t_loop}
                window_loss, t_log, n_log = [], time.perf_counter(), 0
            validate = bool(data.val) and (step % tc.val_every == 0 or step == tc.max_steps)
            save = step % tc.checkpoint_every == 0 or step == tc.max_steps
            if validate or save:
                ema.copy_to(averaged.parameters())
            if validate:
                record.update({'step': step, **evaluate(averaged, data.val, config, device)})
                if record['val_loss'] < best:
                    best = record['val_loss']
                    save_pretrained(averaged, out / 'best')
            if record:
                history.append(record)
                logf.write(json.dumps(record) + '\n')
                logf.flush()
                log(' '.join(f'{k}={v:.4g}' if isinstance(v, float) else f'{k}={v}'
                             for k, v in record.items()))
            if save:
                save_pretrained(averaged, out)
                save_training_state(out, model, opt, {'step': step, 'best_val_loss': best})
            planned = budget.plan(step) if budget is not None else None
            if planned is not None and planned != tc.max_steps:
                log(f'time budget: {tc.max_steps} -> {planned} steps')
                tc.max_steps = planned
    finally:
        logf.close()
    if step == start and not (out / WEIGHTS).is_file():
        # nothing to do (already at max_steps): leave a checkpoint, but never rewrite one
        # (its bytes are the evaluation journal's key: a rewrite re-runs every rollout)
        save_pretrained(averaged, out)
    losses = [h['loss'] for h in history if 'loss' in h]
    return {'steps': step, 'first_loss': first_loss, 'final_loss': losses[-1] if losses else None,
            'best_val_loss': best if best < float('inf') else None, 'history': history,
            'train_s': earlier_s + time.perf_counter() - t_loop, 'resumed_train_s': earlier_s,
            'data': data.summary, 'out': str(out)}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog='comsim-policy-train', description=__doc__.split('\n')[0])
    p.add_argument('--config', type=Path, required=True, help='policy YAML (PolicyConfig)')
    p.add_argument('--data', nargs='+', required=True, metavar='DIR[:source]',
                   help='episode directories; source = real | sim | pseudo_real | gt '
                        'overrides episode.yaml')
    p.add_argument('--out', type=Path, required=True, help='checkpoint directory')
    p.add_argument('--resume', action='store_true', help='continue from OUT/training_state')
    p.add_argument('--max-steps', type=int, default=None)
    p.add_argument('--time-budget-s', type=float, default=None, metavar='SECONDS',
                   help='end within SECONDS of starting (data preparation included): the step '
                        'count is fitted to the measured rate, re-planned at each validation')
    p.add_argument('--device', default=None, help='cpu | cuda | auto (default: config)')
    p.add_argument('--cache-dir', default=None, help="frame cache; '' disables it")
    p.add_argument('--tasks', nargs='+', default=None,
                   help='train only on episodes of these tasks (default: config; empty = all)')
    return p


@cli_main('comsim-policy-train')
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    deadline = None if args.time_budget_s is None else time.monotonic() + args.time_budget_s
    limit_cpu_threads()
    config = PolicyConfig.from_yaml(args.config)
    if args.device:
        config.train.device = args.device
    if args.cache_dir is not None:
        config.train.cache_dir = args.cache_dir
    if args.tasks is not None:
        config.tasks = list(args.tasks)
    specs = [DataSpec.parse(d) for d in args.data]
    summary = train(config, specs, args.out, args.resume, max_steps=args.max_steps,
                    deadline=deadline)
    print(json.dumps({k: v for k, v in summary.items() if k != 'history'}))
    return 0


if __name__ == '__main__':
    sys.exit(main())
