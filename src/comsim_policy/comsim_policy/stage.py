"""The policy stage: train one checkpoint per arm and task, roll each out, report.

An arm (``arms.Arm``) is the data one checkpoint learns from. By default, per task (the recipe
trains one checkpoint per task), one on the recorded real episodes (``out/policy/real/<task>``)
and, when the neural simulator left pseudo-real episodes, one on real + pseudo-real through the
mixture sampler (``out/policy/real_pseudo/<task>``); the experiment passes the paper's arms.
Every arm trains with the same recipe and steps, and with several arms the normaliser is fitted
on the union of their data. Every checkpoint is rolled out by the in-process evaluator on the
bench lab, the same layout seeds for each, ``rollouts`` per task, region and object variant, so
the report gives k/N with intervals and paired tests; the stage returns what it trained and
measured, the report renders it.
"""
from __future__ import annotations

import copy
import dataclasses
import multiprocessing
import os
import shutil
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from comsim_core.episodes import EpisodeNotFoundError, find_episodes, read_meta

from .arms import Arm, arm_specs, normaliser_data
from .config import PolicyConfig
from .training.data_setup import DataSpec
from .training.train import train

if TYPE_CHECKING:
    from .evaluation.results import Evaluation, Rollout

DEFAULT_CONFIG = 'config/policy_train_main_job.yaml'
DEFAULT_TASKS = ('stack_blocks', 'move_card', 'shake_bottle')
EVAL_SEED = 1000      # layouts unseen in recording (which starts at seed 0)


class PolicyStageError(RuntimeError):
    """The policy stage cannot run (no real episodes, unreadable config)."""


@dataclass
class TrainedPolicy:
    """One trained checkpoint and the numbers the report shows about its training."""

    name: str                          # the arm: real | real_pseudo | an Arm's name
    path: Path
    episodes: dict
    steps: int
    samples_per_s: float
    wall_s: float
    val_loss: float | None
    val_action_mae: float | None
    val_image_sensitivity: float | None = None
    task: str = ''
    label: str = ''                    # the arm as a table shows it
    val_action_mae_by_name: dict[str, float] = field(default_factory=dict)  # x..., or joints


@dataclass
class PolicyStageResult:
    """The trained checkpoints, the closed-loop evaluation and one picture per checkpoint."""

    device: str
    cameras: int
    image_size: list[int]
    down_dims: list[int]
    batch_size: int
    inference_steps: int
    checkpoints: Path                 # out/policy
    trained: list[TrainedPolicy]
    rollouts: int                     # per task x region
    regions: list[str]
    eval_seed: int
    timeout_factor: float             # a rollout may last this many times the expert's time
    eval_wall_s: float
    evaluation: Evaluation
    pictures: list[tuple[Rollout, Path]]    # (rollout, its contact sheet under out/pictures)
    wall_s: float


def load_stage_config(config: PolicyConfig | Path | str | None) -> PolicyConfig:
    """A private copy of ``config`` (default: the main-job config in the repository)."""
    if isinstance(config, PolicyConfig):
        return copy.deepcopy(config)
    path = Path(config) if config is not None else _repo() / DEFAULT_CONFIG
    return PolicyConfig.from_yaml(path)


def pseudo_real_available(pseudo_real_dir: Path | None) -> bool:
    """True when ``pseudo_real_dir`` holds at least one episode."""
    if pseudo_real_dir is None:
        return False
    try:
        return bool(find_episodes(pseudo_real_dir))
    except EpisodeNotFoundError:
        return False


def episode_tasks(real_dir: Path) -> list[str]:
    """Tasks of the recorded episodes (episode.yaml), in first-seen order."""
    tasks: list[str] = []
    for path in find_episodes(real_dir):
        task = read_meta(path).task
        if task and task not in tasks:
            tasks.append(str(task))
    return tasks


@contextmanager
def single_thread_cpu() -> Iterator[None]:
    """One torch/OpenMP thread unless the user chose (OMP_NUM_THREADS set).

    The policy's ops are small: on the 2-core machine (shared with other jobs) the main-job
    config trained at 240 samples/s with one thread and 3 with two. Child processes (the policy
    node) inherit ``OMP_NUM_THREADS=1`` through the environment.
    """
    if os.environ.get('OMP_NUM_THREADS'):
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    os.environ['OMP_NUM_THREADS'] = '1'
    try:
        yield
    finally:
        os.environ.pop('OMP_NUM_THREADS', None)
        torch.set_num_threads(threads)


def main_job_arms(with_pseudo_real: bool, mixture: dict | None = None) -> list[Arm]:
    """Real only, and real + pseudo-real (equal sample shares unless the config says)."""
    arms = [Arm('real', 'real', {'real': None})]
    if with_pseudo_real:
        arms.append(Arm('real_pseudo', 'real + pseudo-real', {'real': None, 'pseudo_real': None},
                        mixture or {'real': 1.0, 'pseudo_real': 1.0}))
    return arms


def arm_config(config: PolicyConfig, arm: Arm, union: Sequence[str]) -> PolicyConfig:
    """The recipe for one arm: its sample shares, no count selection (``arm_specs`` already
    picked the episodes) and, when ``union`` names data, the normaliser fitted on it."""
    config = copy.deepcopy(config)
    config.train.mixture = dict(arm.weights)
    config.train.mixture_counts = {}
    if union and config.normalization == 'data':
        config.train.normalization_data = list(union)
    return config


def train_policy(name: str, task: str, specs: list[DataSpec], config: PolicyConfig, out: Path,
                 log: Callable[[str], None], label: str = '', resume: bool = False
                 ) -> TrainedPolicy:
    """Train ``task``'s checkpoint into ``out/policy/<name>/<task>``: from scratch (any old one
    is replaced), or with ``resume`` continuing a run that left its training state."""
    from .checkpoint import has_training_state  # noqa: PLC0415

    ckpt = out / 'policy' / name / task
    log(f'[policy:{name}:{task}] training on {torch.get_num_threads()} torch thread(s)')
    resume = resume and has_training_state(ckpt)
    if not resume:
        shutil.rmtree(ckpt, ignore_errors=True)
    t0 = time.monotonic()
    config = copy.deepcopy(config)
    config.tasks = [task]
    summary = train(config, specs, ckpt, resume=resume,
                    log=lambda s: log(f'[policy:{name}:{task}] {s}'))
    # this call's time + the resumed runs' training loops (to the checkpoint resumed from)
    wall = time.monotonic() - t0 + summary['resumed_train_s']
    history = summary['history']
    rates = [h['samples_per_s'] for h in history if 'samples_per_s' in h]
    vals = [h for h in history if 'val_loss' in h]
    last = vals[-1] if vals else {}
    return TrainedPolicy(name, ckpt, summary['data'], int(summary['steps']),
                         sum(rates) / len(rates) if rates else 0.0, wall,
                         last.get('val_loss'), last.get('val_action_mae'),
                         last.get('val_image_sensitivity'), task, label or name,
                         {k.removeprefix('val_action_mae_'): v for k, v in last.items()
                          if k.startswith('val_action_mae_')})


def _train_job(job: tuple, log: Callable[[str], None] | None = None) -> TrainedPolicy:
    """``train_policy`` on the job's ``threads`` torch threads (restored after), logging to
    ``log`` or, in a worker process, to its stdout."""
    name, task, specs, config, out, label, resume, threads = job
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return train_policy(name, task, specs, config, out,
                            log or (lambda s: print(s, flush=True)), label, resume)
    finally:
        torch.set_num_threads(before)


def wave_threads(n_jobs: int, cores: int) -> list[int]:
    """Torch threads of each of ``n_jobs`` trainings run on ``cores`` cores in waves of
    ``cores`` at a time: one each in a full wave; a last, partial wave shares all the cores.

    One thread per process is the faster use of the cores when every core has a training
    (small ops); a lone training on one thread leaves the other cores idle for a whole arm
    (a step of the recipe: ~300 ms on one thread, ~186 ms on two;
    bench/results/policy_train_step.json).
    """
    cores = max(1, cores)
    full = n_jobs - n_jobs % cores
    rest = n_jobs - full
    return [1] * full + [max(1, cores // rest)] * rest if rest else [1] * full


def warm_cache(runs: Sequence[tuple], cache_dir: str) -> int:
    """Decode every run's episodes into the frame cache once, before parallel training (two
    processes must not write the same cache entry). Returns the episodes decoded."""
    from .data.cache import FrameCache  # noqa: PLC0415

    decoded = 0
    for _arm, _task, specs, config in runs:
        cache = FrameCache(cache_dir, config)
        for spec in specs:
            cache.get(spec.path, spec.source)
        decoded += cache.misses
    return decoded


def train_all(runs: Sequence[tuple], out: Path, log: Callable[[str], None], resume: bool,
              workers: int) -> list[TrainedPolicy]:
    """Every (arm, task, specs, config) run on ``workers`` cores, in waves (``wave_threads``):
    one process per core, then what is left sharing the cores. In this process when one run
    has every core."""
    threads = wave_threads(len(runs), workers)
    jobs = [(arm.name, task, specs, c, out, arm.label, resume, n)
            for (arm, task, specs, c), n in zip(runs, threads, strict=True)]
    if len(jobs) > 1:
        warm_cache(runs, runs[0][3].train.cache_dir)
    trained: list[TrainedPolicy] = []
    ctx = multiprocessing.get_context('spawn')
    while len(trained) < len(jobs):
        n = threads[len(trained)]
        wave = jobs[len(trained):len(trained) + max(1, workers // n)]
        if len(wave) == 1:
            trained.append(_train_job(wave[0], log))
            continue
        with ProcessPoolExecutor(len(wave), mp_context=ctx) as pool:
            trained += list(pool.map(_train_job, wave))
    return trained


def policy_stage(out: Path, real_dir: Path, pseudo_real_dir: Path | None,
                 log: Callable[[str], None] = print, rollouts: int = 20,
                 tasks: Sequence[str] | None = None, *, regions: Sequence[str] = ('id', 'ood'),
                 variants: Sequence[str] = ('',),
                 config: PolicyConfig | Path | str | None = None,
                 cache_dir: Path | str | None = None,
                 evaluation: dict | None = None,
                 arms: Sequence[Arm] | None = None,
                 normaliser_arms: Sequence[Arm] | None = None,
                 sources: dict[str, Path] | None = None,
                 resume: bool = False,
                 allowed: Mapping[str, Collection[str]] | None = None,
                 unseen_variants: Mapping[str, Sequence[str]] | None = None,
                 max_steps: int | None = None,
                 train_workers: int = 1) -> PolicyStageResult:
    """Train per task and arm, evaluate in process, return what was trained and measured.

    ``config`` defaults to ``config/policy_train_main_job.yaml``; ``cache_dir`` (default: the
    config's, relative to the repository) keeps decoded frames between runs; ``evaluation``
    replaces keys of config/evaluation.yaml (workers, lab overrides...). ``arms`` default to
    ``main_job_arms``; with several, the normaliser is fitted on the union of the data of
    ``normaliser_arms`` (default: ``arms``; an experiment that trains some of its arms now
    keeps the normaliser of all of them); ``sources`` adds episode folders by source (sim,
    gt, ...) to the real and pseudo-real ones. ``resume`` continues checkpoints that left a
    training state and keeps the rollouts an interrupted evaluation journalled.
    ``allowed`` limits a source to the episodes it names (the experiment: the trajectories
    that passed both the twin's and the lab's check, so B, C and E share them);
    ``unseen_variants`` (task -> object variants held out of training) are rolled out on the
    first region as cells of their own;
    ``max_steps`` replaces the recipe's; ``train_workers`` checkpoints train at a time.
    """
    from .evaluation.config import load_config as load_evaluation  # noqa: PLC0415
    from .evaluation.in_process import evaluate  # noqa: PLC0415

    out, real_dir = Path(out), Path(real_dir)
    t_stage = time.monotonic()
    try:
        if not find_episodes(real_dir):
            raise PolicyStageError(f'no real episodes under {real_dir}')
    except EpisodeNotFoundError as exc:
        raise PolicyStageError(f'policy stage: {exc}') from exc
    cfg = load_stage_config(config)
    cfg.train.device = 'cpu' if cfg.train.device == 'auto' and not torch.cuda.is_available() \
        else cfg.train.device
    cfg.train.cache_dir = _cache_dir(cache_dir, cfg.train.cache_dir, out)
    if max_steps:
        cfg.train.max_steps = int(max_steps)
    tasks = list(tasks or episode_tasks(real_dir) or DEFAULT_TASKS)
    folders = {'real': real_dir}
    if pseudo_real_available(pseudo_real_dir):
        folders['pseudo_real'] = Path(pseudo_real_dir)
    folders.update({k: Path(v) for k, v in (sources or {}).items()})
    if arms is None:
        if 'pseudo_real' not in folders:
            log(f'[policy] no pseudo-real episodes ({pseudo_real_dir}): training on real only')
        arms = main_job_arms('pseudo_real' in folders, dict(cfg.train.mixture) or None)
    fitted_on = list(normaliser_arms or arms)
    union = normaliser_data(fitted_on, folders) if len(fitted_on) > 1 else []
    runs = [(arm, task, arm_specs(arm, folders, [task], allowed), arm_config(cfg, arm, union))
            for arm in arms for task in tasks]
    eval_cfg = dataclasses.replace(
        load_evaluation(None), **{'tasks': tasks, 'rollouts': int(rollouts),
                                  'regions': list(regions), 'variants': list(variants),
                                  'out': str(out / 'policy' / 'evaluation'), 'seed': EVAL_SEED,
                                  'sheets': 1, 'resume': resume, **(evaluation or {})})
    with single_thread_cpu():
        trained = train_all(runs, out, log, resume, train_workers)
        t_eval = time.monotonic()
        result = evaluate([t.path for t in trained], eval_cfg,
                          log=lambda s: log(f'[policy:eval] {s}'))
        for task, variants_held in (unseen_variants or {}).items():
            if task not in tasks or not variants_held:
                continue
            unseen_cfg = dataclasses.replace(
                eval_cfg, tasks=[task], regions=list(eval_cfg.regions[:1]),
                variants=list(variants_held), out=str(Path(eval_cfg.out) / f'unseen_{task}'))
            result.rollouts += evaluate([t.path for t in trained if t.task == task], unseen_cfg,
                                        log=lambda s: log(f'[policy:eval] {s}')).rollouts
        result.save(Path(eval_cfg.out) / 'results.json')
    eval_wall = time.monotonic() - t_eval
    sheets = _pictures(result.rollouts, out)
    wall = time.monotonic() - t_stage
    log(f'[policy] done in {wall:.0f} s')
    return PolicyStageResult(
        device=cfg.train.device, cameras=len(cfg.camera_topics),
        image_size=list(cfg.image_size), down_dims=list(cfg.model.down_dims),
        batch_size=cfg.train.batch_size, inference_steps=cfg.scheduler.num_inference_steps,
        checkpoints=out / 'policy', trained=trained, rollouts=int(rollouts),
        regions=list(eval_cfg.regions), eval_seed=EVAL_SEED,
        timeout_factor=eval_cfg.timeout_factor, eval_wall_s=eval_wall, evaluation=result,
        pictures=sheets, wall_s=wall)


def _pictures(rollouts: list[Rollout], out: Path) -> list[tuple[Rollout, Path]]:
    """Copy one contact sheet per checkpoint (a success when there is one) to out/pictures."""
    chosen: dict[str, Rollout] = {}
    for r in rollouts:
        if r.sheet and Path(r.sheet).exists():
            if r.checkpoint not in chosen or (r.success and not chosen[r.checkpoint].success):
                chosen[r.checkpoint] = r
    pictures = []
    for name, r in chosen.items():
        dst = out / 'pictures' / f'policy_{name}_{r.task}_seed{r.seed}.png'
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(r.sheet, dst)
        pictures.append((r, dst))
    return pictures


def _cache_dir(explicit: Path | str | None, configured: str, out: Path) -> str:
    if explicit is not None:
        return str(explicit)
    if not configured:
        return str(out / 'policy' / 'cache')
    path = Path(configured)
    return str(path if path.is_absolute() else _repo() / path)


def _repo() -> Path:
    from comsim_core.paths import repo_root  # noqa: PLC0415

    return repo_root() or Path.cwd()
