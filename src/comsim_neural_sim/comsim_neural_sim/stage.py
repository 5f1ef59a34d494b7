"""Main-job stage: train a small neural simulator on paired episodes, translate the sim
episodes into pseudo-real ones, run the ablation, score translated generated episodes against
ground truth when the caller can render it, and return what it measured (the main job's
report renders it)."""

from __future__ import annotations

import csv
import dataclasses
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from comsim_core.episodes import find_episodes
from comsim_core.episodes.paired import variant_source

from .config import NeuralSimConfig
from .data.clips import PairedClip, load_paired_dir
from .errors import NeuralSimError
from .evaluation.ablation import AblationResult, run_ablation
from .evaluation.generated import GeneratedEvalResult, evaluate_generated
from .training.train import TrainResult, train
from .translate.episode import camera_topics, translate_dir

DEFAULT_TRAIN_STEPS = 600   # ~4-5 min for the default config on 2 cores, 1 thread
RESUME_EVERY = 500          # steps between the stage's training states
# (sim episodes, output directory, cameras, frames per episode) -> ground-truth paired episodes
GroundTruthFn = Callable[[list[Path], Path, list[str], int], object]


def paired_cameras(paired_dir: Path) -> list[str]:
    """Every camera of the paired episodes: the sim episodes to translate have them all."""
    from comsim_core.episodes import Episode  # noqa: PLC0415
    eps = find_episodes(paired_dir)
    if not eps:
        raise NeuralSimError(f'no paired episodes (metadata.yaml) under {paired_dir}')
    with Episode.open(eps[0]) as ep:
        cams = sorted(camera_topics(ep.topics, '/real/cameras/'))
    if not cams:
        raise NeuralSimError(f'paired episode {eps[0]} has no /real/cameras/<camera> stream')
    return cams


def pick_per_task(sims: list[Path], n: int) -> list[Path]:
    """Up to ``n`` sim episodes, one from each task folder in turn (sorted, deterministic)."""
    groups: dict[Path, list[Path]] = {}
    for p in sorted(sims):
        groups.setdefault(p.parent, []).append(p)
    picked: list[Path] = []
    for k in range(max((len(g) for g in groups.values()), default=0)):
        picked += [g[k] for g in groups.values() if k < len(g)]
    return picked[:max(0, n)]


@dataclass
class GeneratedScore:
    """A few translated sim episodes scored against rendered ground truth, or why they were not.

    ``result`` is None when rendering or scoring failed: ``error`` then says what failed, so
    the stage goes on and the report says so.
    """

    episodes: list[str]
    cameras: list[str]
    max_frames: int
    render_s: float = 0.0
    eval_s: float = 0.0
    result: GeneratedEvalResult | None = None
    error: str | None = None


@dataclass
class NeuralSimStageResult:
    """What the stage did and measured; the main job's report renders it."""

    train_steps: int
    train_episodes: int
    held_out: list[str]          # empty: one paired episode, evaluated on its training episode
    cameras: list[str]
    height: int
    width: int
    frames: int
    train_s: float
    first_loss: float
    last_loss: float
    sim_episodes: int
    pseudo_real: Path
    sample_steps: int
    translate_s: float
    grid: Path                   # sim | translated | ground truth, first held-out clip
    loss_curve: Path | None
    ablation: AblationResult
    generated: GeneratedScore | None = None
    train_variants: int = 0      # appearance-variant pairs trained on beside the episodes
    object_loss_weight: float = 1.0   # the loss's weight on the twin's object pixels


def score_generated(out: Path, sims: list[Path], pseudo: Path, ground_truth: GroundTruthFn,
                    cameras: list[str], episodes: int = 3, max_frames: int = 32,
                    log=print) -> GeneratedScore:
    """Render ground truth for a few translated sim episodes and score them."""
    chosen = pick_per_task(sims, episodes)
    score = GeneratedScore([p.name for p in chosen], list(cameras), max_frames)
    try:
        t0 = time.perf_counter()
        ground_truth(chosen, out / 'ground_truth', list(cameras), max_frames)
        score.render_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        score.result = evaluate_generated([pseudo / p.name for p in chosen], out / 'ground_truth',
                                          out / 'generated_eval', list(cameras), log=log)
        score.eval_s = time.perf_counter() - t0
    except Exception as exc:  # the report says what failed; the neural-sim stage goes on
        log(f'ground truth for generated episodes failed: {type(exc).__name__}: {exc}')
        score.error = f'{type(exc).__name__}: {exc}'
        return score
    log(f'ground truth: {len(chosen)} episode(s) rendered in {score.render_s:.0f} s, scored in '
        f'{score.eval_s:.0f} s')
    return score


def logged_losses(res: TrainResult) -> TrainResult:
    """``res`` with the whole run's first and last loss from its ``loss.csv``: a resumed run
    reports only the steps after the resume (NaN when it was already finished)."""
    path = Path(res.out) / 'loss.csv'
    rows = list(csv.DictReader(path.open())) if path.is_file() else []
    if not rows:
        return res
    return dataclasses.replace(res, first_loss=float(rows[0]['loss']),
                               last_loss=float(rows[-1]['loss']))


def training_clips(clips: list[PairedClip], held_name: str | None) -> list[PairedClip]:
    """The clips to train on: all but the held-out pair's, its appearance variants too (the
    same real footage would leak into training otherwise)."""
    return [c for c in clips if variant_source(c.name) != held_name]


def neural_sim_stage(out: Path, paired_dir: Path, sim_dir: Path, log=print,
                     train_steps: int | None = None, config: NeuralSimConfig | None = None,
                     steps: int = 10, ground_truth: GroundTruthFn | None = None,
                     ground_truth_episodes: int = 3, ground_truth_frames: int = 32,
                     episodes: Sequence[Path] | None = None,
                     variants_dir: Path | None = None) -> NeuralSimStageResult:
    """Train, translate every sim episode into ``out/pseudo_real``, ablate on a held-out one.

    ``ground_truth``, when given, renders real-looking ground truth of sim episodes (the main
    job passes the bench lab's; this package never imports it): then a few translated episodes
    (``ground_truth_episodes``, one per task in turn, ``ground_truth_frames`` frames each) are
    scored against it. ``episodes`` translates only those sim episodes (default: all).
    ``variants_dir``: more pairs, the same real episodes replayed in twin scenes of other looks
    (``appearance_variant_name``); trained on beside the pairs, a held-out pair's held out too.
    """
    out, paired_dir, sim_dir = Path(out), Path(paired_dir), Path(sim_dir)
    for what, d in (('paired-episode', paired_dir), ('sim-episode', sim_dir)):
        if not d.is_dir():
            raise NeuralSimError(f'neural-sim stage: no {what} directory at {d}')
    sims = [Path(p) for p in episodes] if episodes is not None else find_episodes(sim_dir)
    if not sims:
        raise NeuralSimError(f'neural-sim stage: no sim episodes (metadata.yaml) under {sim_dir}')
    cfg = config or NeuralSimConfig()
    # saved every RESUME_EVERY steps: an interrupted stage continues its training, and a
    # finished one is not retrained (its translations on disk stay those of one checkpoint)
    cfg = cfg.replace(cameras=paired_cameras(paired_dir), sample_every=10**9,
                      save_every=RESUME_EVERY, log_every=50)
    clips = load_paired_dir(paired_dir, cfg.cameras, cfg.command_topic)
    cfg = cfg.replace(action_dim=int(clips[0].actions.shape[1]))
    names = sorted({c.name for c in clips})
    held_name = names[-1] if len(names) > 1 else None   # the last episode, all its cameras
    held = [c for c in clips if c.name == held_name] or clips
    variants = ([] if variants_dir is None else
                load_paired_dir(variants_dir, cfg.cameras, cfg.command_topic))
    train_clips = training_clips(clips + variants, held_name)
    n_steps = DEFAULT_TRAIN_STEPS if train_steps is None else int(train_steps)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        t0 = time.perf_counter()
        ckpt = out / 'checkpoint'
        resume = (ckpt / 'train_state' / 'state.json').is_file()
        if ckpt.exists() and not resume:
            shutil.rmtree(ckpt)
        res = logged_losses(train(cfg, train_clips, ckpt, resume=resume, steps=n_steps, log=log))
        train_s = time.perf_counter() - t0
        log(f'neural sim: trained {n_steps} steps in {train_s:.0f} s, loss '
            f'{res.first_loss:.4f} -> {res.last_loss:.4f}')
        pseudo = out / 'pseudo_real'
        t0 = time.perf_counter()
        translate_dir(sims, ckpt, pseudo, steps=steps, log=log, workers=os.cpu_count() or 1)
        translate_s = time.perf_counter() - t0
        abl = run_ablation(ckpt, held, out / 'ablation', steps=steps, log=log)
    finally:
        torch.set_num_threads(threads)
    pics = out / 'pictures'
    pics.mkdir(parents=True, exist_ok=True)
    grid = pics / 'neural_sim_grid.png'
    shutil.copyfile(abl.grid, grid)
    loss = pics / 'neural_sim_loss.png' if (ckpt / 'loss.png').is_file() else None
    if loss is not None:
        shutil.copyfile(ckpt / 'loss.png', loss)
    generated = None
    if ground_truth is not None and ground_truth_episodes > 0:
        generated = score_generated(out, sims, pseudo, ground_truth, cfg.cameras,
                                    ground_truth_episodes, ground_truth_frames, log)
    return NeuralSimStageResult(
        train_steps=n_steps, train_episodes=len(names) - bool(held_name),
        train_variants=len({c.name for c in train_clips if c.name not in names}),
        held_out=sorted(set(abl.episodes)) if held_name else [], cameras=list(cfg.cameras),
        height=cfg.height, width=cfg.width, frames=cfg.frames, train_s=train_s,
        first_loss=res.first_loss, last_loss=res.last_loss, sim_episodes=len(sims),
        pseudo_real=pseudo, sample_steps=steps, translate_s=translate_s, grid=grid,
        loss_curve=loss, ablation=abl, generated=generated,
        object_loss_weight=cfg.object_loss_weight)
