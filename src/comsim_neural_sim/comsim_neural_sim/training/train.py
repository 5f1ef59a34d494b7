"""Train the neural simulator on paired clips.

    python -m comsim_neural_sim.training.train --config config/neural_sim.yaml --data DIR \
        --out CKPT [--resume] [--steps N]

``--data`` is a directory of paired rosbag2 episodes, or ``synthetic:N`` for N synthetic
episodes. Multi-GPU / multi-node: start the same command with ``accelerate launch``.
The output directory is a pipeline checkpoint (EMA weights) plus ``train_state/`` (resume),
``loss.csv``, ``loss.png`` and ``samples/step_*.png``.
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from accelerate import Accelerator
from diffusers.training_utils import EMAModel
from torch.utils.data import DataLoader

from comsim_core.errors import cli_main

from ..checkpoint import load_config, save_checkpoint, transformer_from_config
from ..config import NeuralSimConfig
from ..data.clips import ClipDataset, PairedClip, action_stats, load_paired_dir
from ..data.synthetic import synthetic_pair
from ..errors import NeuralSimError
from ..models.autoencoder import LatentCodec
from ..sampling.guidance import GuidanceWeights
from ..sampling.pipeline import NeuralSimPipeline
from ..schedulers import corrupt, make_scheduler
from .dropout import sample_condition_masks
from .report import append_csv, finite, plot_loss, save_sheet
from .state import load_train_state, save_train_state


@dataclass
class TrainResult:
    """What a run did: first/last logged loss, speed, where the checkpoint is."""

    steps: int
    first_loss: float
    last_loss: float
    samples_per_s: float
    out: Path


def load_clips(data: str, cfg: NeuralSimConfig) -> list[PairedClip]:
    """``synthetic:N[:T]`` or a directory of paired episodes."""
    if data.startswith('synthetic'):
        parts = data.split(':')
        n = int(parts[1]) if len(parts) > 1 else 8
        t = int(parts[2]) if len(parts) > 2 else 4 * cfg.frames
        return [synthetic_pair(t, cfg.height, cfg.width, cfg.action_dim, seed=i)
                for i in range(n)]
    return load_paired_dir(data, cfg.cameras, cfg.command_topic)


def _batches(loader: DataLoader):
    while True:
        yield from loader


def _validation_sheet(path: Path, model: torch.nn.Module, cfg: NeuralSimConfig,
                      codec: LatentCodec | None, batch: dict[str, torch.Tensor]) -> None:
    pipe = NeuralSimPipeline(model, cfg, codec=codec)
    sim, act, real = batch['sim'][:1], batch['actions'][:1], batch['real'][:1]
    was_training = model.training
    out = pipe.generate(sim.to(pipe.device), act.to(pipe.device), GuidanceWeights(1.0, 1.0),
                        'composed', steps=10, seed=0, camera=batch['camera'][:1])
    model.train(was_training)
    rows = [pipe.decode_frames(x[0].to(pipe.device), cfg.height, cfg.width)
            for x in (sim, real, out)]
    save_sheet(path, rows)


def train(cfg: NeuralSimConfig, clips: list[PairedClip], out: str | Path, resume: bool = False,
          steps: int | None = None, log=print) -> TrainResult:
    """Train (or resume) for ``steps`` (default ``cfg.steps``) total optimiser steps."""
    out = Path(out)
    total = cfg.steps if steps is None else steps
    gpu = torch.cuda.is_available()
    # cpu=True lets a CPU-only torchrun/accelerate launch form a gloo process group (MULTI_CPU)
    accel = Accelerator(mixed_precision='bf16' if gpu else 'no', cpu=not gpu)
    state_dir = out / 'train_state'
    if resume:
        saved = load_config(out, expect=cfg)
        cfg = cfg.replace(action_mean=saved.action_mean, action_std=saved.action_std)
    elif cfg.action_mean is None:
        mean, std = action_stats(clips)
        cfg = cfg.replace(action_mean=mean, action_std=std)
    if cfg.object_loss_weight != 1.0:
        masked = sum(c.objects is not None for c in clips)
        if not masked:
            raise NeuralSimError(f'object_loss_weight {cfg.object_loss_weight} weighs the '
                                 'twin\'s object masks, but no paired episode has them (replay '
                                 'with object masks, /sim/cameras/<cam>/objects)')
        if masked < len(clips):
            log(f'object masks in {masked} of {len(clips)} clips: the others train unweighted')
    codec = LatentCodec.from_pretrained(cfg.autoencoder_path) if cfg.space == 'latent' else None
    if codec is not None:
        codec.vae.to(accel.device)
    dataset = ClipDataset(clips, cfg, codec)
    torch.manual_seed(cfg.seed)
    model = transformer_from_config(cfg)
    # The averaged weights are what is sampled and saved; `ema` keeps them (decay
    # min(decay, (1 + t) / (10 + t))), `averaged` is the model they are copied into for use.
    averaged = copy.deepcopy(model).eval().requires_grad_(False)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    start, ema_step = 0, 0
    if resume:
        meta = load_train_state(state_dir, model, averaged, opt)
        start, ema_step = int(meta['step']), int(meta['ema_step'])
        log(f'resumed at step {start} from {state_dir}')
    ema = EMAModel(averaged.parameters(), decay=cfg.ema_decay)
    ema.optimization_step = ema_step
    # Shuffling is seeded alike on every process (accelerate shards it); the noise, timesteps
    # and condition dropout differ per process, or data-parallel ranks would repeat each other.
    shuffle = torch.Generator().manual_seed(cfg.seed + start)
    gen = torch.Generator().manual_seed(cfg.seed + start + 7919 * accel.process_index)
    loader = DataLoader(dataset, batch_size=cfg.batch_size, shuffle=True, drop_last=False,
                        generator=shuffle)
    model, opt, loader = accel.prepare(model, opt, loader)
    log(f'training on {accel.num_processes} process(es), device {accel.device}, '
        f'{len(dataset)} windows')
    averaged.to(accel.device)
    ema.to(accel.device)
    scheduler = make_scheduler(cfg)
    val_batch = next(iter(DataLoader(dataset, batch_size=1)))
    if accel.is_main_process:
        (out / 'samples').mkdir(parents=True, exist_ok=True)
        cfg.save(out)
    first = last = float('nan')
    t0, seen, run_loss, run_n = time.perf_counter(), 0, 0.0, 0
    batches = _batches(loader)
    model.train()
    for step in range(start + 1, total + 1):
        batch = next(batches)
        real, sim, act = batch['real'], batch['sim'], batch['actions']
        b = real.shape[0]
        masks = sample_condition_masks(b, cfg.frames, cfg.context_frames, cfg.p_drop_action,
                                       cfg.p_drop_sim, cfg.p_drop_context, gen)
        noise = torch.randn(real.shape, generator=gen).to(real.device)
        noisy, t, target = corrupt(scheduler, real, noise, gen)
        ctx = masks.context.to(real.device)
        with accel.autocast():
            pred = model(noisy, t.to(real.device), sim, act, masks.sim_keep, masks.action_keep,
                         context=real, context_mask=ctx, camera=batch['camera']).sample
        per_frame = frame_losses(pred.float(), target, batch['objects'].to(real.device),
                                 cfg.object_loss_weight)
        weight = 1.0 - ctx
        loss = (per_frame * weight).sum() / weight.sum().clamp_min(1.0)
        accel.backward(loss)
        if cfg.grad_clip:
            accel.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        ema.step(accel.unwrap_model(model).parameters())
        val = float(loss.detach())
        if not finite(val):
            raise NeuralSimError(f'loss became {val} at step {step}; lower lr or check data')
        seen += b * accel.num_processes
        run_loss, run_n = run_loss + val, run_n + 1
        if step % cfg.log_every == 0 or step == total or step == start + 1:
            last = run_loss / run_n
            first = last if first != first else first
            rate = seen / (time.perf_counter() - t0)
            if accel.is_main_process:
                append_csv(out / 'loss.csv', {'step': step, 'loss': last, 'samples_per_s': rate,
                                              'elapsed_s': time.perf_counter() - t0})
                log(f'step {step}/{total} loss {last:.5f} {rate:.1f} samples/s')
            run_loss, run_n = 0.0, 0
        save = step % cfg.save_every == 0 or step == total
        sample = step % cfg.sample_every == 0 or step == total
        if accel.is_main_process and (save or sample):
            ema.copy_to(averaged.parameters())
        if accel.is_main_process and save:
            _save(out, cfg, accel.unwrap_model(model), averaged, ema.optimization_step, opt,
                  step)
        if accel.is_main_process and sample:
            _validation_sheet(out / 'samples' / f'step_{step:06d}.png', averaged, cfg, codec,
                              val_batch)
            plot_loss(out / 'loss.csv', out / 'loss.png')
    accel.wait_for_everyone()
    rate = seen / max(time.perf_counter() - t0, 1e-9)
    return TrainResult(total, first, last, rate, out)


def frame_losses(pred: torch.Tensor, target: torch.Tensor, objects: torch.Tensor,
                 object_weight: float) -> torch.Tensor:
    """(B, T) mean squared error per frame; pixels covered by objects (``objects`` (B, T, 1,
    h, w) in [0, 1]) weighted ``object_weight``, the rest 1, the mean taken over the weights
    (so a frame without objects, or a weight of 1, gives the plain mean)."""
    err = (pred - target) ** 2
    if object_weight == 1.0:
        return err.mean(dim=(2, 3, 4))
    w = 1.0 + (object_weight - 1.0) * objects
    return (err * w).mean(dim=(2, 3, 4)) / w.mean(dim=(2, 3, 4))


def _save(out: Path, cfg: NeuralSimConfig, model: torch.nn.Module, averaged: torch.nn.Module,
          ema_step: int, opt: torch.optim.Optimizer, step: int) -> None:
    save_checkpoint(out, cfg, averaged, make_scheduler(cfg))
    save_train_state(out / 'train_state', model, averaged, opt,
                     {'step': step, 'ema_step': ema_step})


@cli_main('comsim-neural-sim-train')
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--config', required=True, help='neural-sim YAML (config/neural_sim.yaml)')
    ap.add_argument('--data', required=True, help='paired-episode dir or synthetic:N[:T]')
    ap.add_argument('--out', required=True, help='checkpoint directory')
    ap.add_argument('--resume', action='store_true', help='continue from --out/train_state')
    ap.add_argument('--steps', type=int, default=None, help='total steps (default: config)')
    args = ap.parse_args(argv)
    cfg = NeuralSimConfig.from_yaml(args.config)
    out = Path(args.out)
    if out.exists() and (out / 'train_state').exists() and not args.resume:
        print(f'{out} holds a training run; pass --resume or choose another --out',
              file=sys.stderr)
        return 2
    res = train(cfg, load_clips(args.data, cfg), out, resume=args.resume, steps=args.steps)
    print(f'done: {res.steps} steps, loss {res.first_loss:.4f} -> {res.last_loss:.4f}, '
          f'{res.samples_per_s:.1f} samples/s, checkpoint {res.out}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
