"""generate(): many randomised episodes of one task, in parallel, resumable, with progress.

Episode i of a run has name `episode_<i:04d>_<task>` and seed `episode_seed(seed, task, i)`,
so the result does not depend on the number of workers and a rerun skips what is on disk:
complete episodes (sidecar status complete) and discarded failures (a marker under
`.discarded/`). Anything half-written (`.partial/`) is redone. Workers are spawned processes,
each with its own backend (MuJoCo and EGL contexts do not survive fork).
"""
from __future__ import annotations

import logging
import multiprocessing as mp
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from comsim_core.episodes.layout import is_complete
from comsim_core.episodes.sidecar import read_sidecar, write_sidecar
from comsim_core.tasks.programs import Program, builtin_program
from comsim_twin.generation.config import GenerationConfig
from comsim_twin.generation.randomise import episode_seed, randomise, scale_cameras
from comsim_twin.scene import TwinScene

log = logging.getLogger(__name__)
DISCARDED_DIR = '.discarded'


@dataclass
class EpisodeRecord:
    index: int
    name: str
    seed: int
    success: bool
    kept: bool
    reason: str
    sim_s: float
    wall_s: float
    skipped: bool = False


@dataclass
class GenerationReport:
    task: str
    out_dir: str
    requested: int
    made: int = 0
    skipped: int = 0
    successes: int = 0
    failures: int = 0
    discarded: int = 0
    workers: int = 1
    wall_s: float = 0.0
    episodes: list[EpisodeRecord] = field(default_factory=list)

    @property
    def success_rate(self) -> float:
        done = [e for e in self.episodes if not e.skipped]
        return sum(e.success for e in done) / len(done) if done else float('nan')

    def to_dict(self) -> dict[str, Any]:
        return {**{k: v for k, v in asdict(self).items() if k != 'episodes'},
                'success_rate': self.success_rate,
                'episodes': [asdict(e) for e in self.episodes]}


def episode_name(task: str, index: int) -> str:
    return f'episode_{index:04d}_{task}'


def already_done(out_dir: Path, name: str) -> dict | None:
    """Sidecar (or discard marker) of an episode that need not be made again."""
    if is_complete(out_dir / name):
        return read_sidecar(out_dir / name)
    return read_sidecar(out_dir / DISCARDED_DIR / name)


# ---------------------------------------------------------------------------- one job
_WORKER: dict[str, Any] = {}


def _init_worker(backend_name: str) -> None:
    from comsim_twin.backends import make_backend
    _WORKER['backend'] = make_backend(backend_name)


def _robot(path: str):
    from comsim_core.robot.model import RobotModel
    key = f'robot:{path}'
    if key not in _WORKER:
        _WORKER[key] = RobotModel.load(path or None)
    return _WORKER[key]


def _run_job(job: tuple) -> EpisodeRecord:
    from comsim_core.robot.model import IKError
    from comsim_twin.generation.episode import EpisodeOutcome, run_episode
    from comsim_twin.generation.writer import GeneratedEpisodeWriter
    base, task, index, seed, cfg, program, out_dir = job
    t0 = time.monotonic()
    name = episode_name(task, index)
    rnd = randomise(base, task, cfg, seed)
    rnd.scene = scale_cameras(rnd.scene, cfg.image_scale)
    backend = _WORKER['backend']
    robot = _robot(base.robot_model)
    writer = GeneratedEpisodeWriter(Path(out_dir), name, rnd.scene.cameras, robot.joint_names,
                                    (cfg.joint_state_hz, cfg.camera_hz, cfg.control_hz),
                                    cfg.storage, cfg.distro)
    recorded = True
    try:
        out = run_episode(backend, rnd, program, seed, cfg, writer, robot)
    except IKError as exc:     # a layout the arm cannot serve: a failed episode, not a dead run
        recorded = False       # discarded below whatever `failures` says: nothing to keep
        out = EpisodeOutcome(False, f'program unreachable: {exc}', 0.0, 0.0, 0, {})
    except BaseException:
        writer.abort()
        raise
    meta = {'task': task, 'operator': 'generator', 'source': 'sim', 'seed': seed,
            'region': rnd.params['region'],
            'episode_index': index, 'backend': cfg.backend, 'success': out.success,
            'success_reason': out.reason, 'program': (program or builtin_program(task)).to_dict(),
            'randomisation': rnd.params, 'image_scale': cfg.image_scale,
            'rates_hz': {'control': cfg.control_hz, 'camera': cfg.camera_hz,
                         'joint_states': cfg.joint_state_hz},
            'final_object_states': out.final_states}
    kept = out.success or (cfg.failures == 'label' and recorded)
    if kept:
        writer.finish(meta, out.success, notes=out.reason)
    else:
        writer.abort()
        marker = Path(out_dir) / DISCARDED_DIR / name
        marker.mkdir(parents=True, exist_ok=True)
        write_sidecar(marker, {'status': 'discarded', 'episode': name, 'metadata': meta,
                               'success': False, 'notes': out.reason})
    return EpisodeRecord(index, name, seed, out.success, kept, out.reason, out.sim_duration_s,
                         time.monotonic() - t0)


# ---------------------------------------------------------------------------- the run
def generate(base_scene: TwinScene, task: str, n_episodes: int, out_dir: str | Path,
             seed: int = 0, workers: int | None = None, config: GenerationConfig | None = None,
             program: Program | None = None, progress: bool = True) -> GenerationReport:
    """Make episodes 0..n_episodes-1 of `task` under `out_dir` (skipping finished ones)."""
    cfg = config or GenerationConfig.load()
    cfg.task(task)
    if n_episodes < 0:
        raise ValueError(f'n_episodes must be >= 0, got {n_episodes}')
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    workers = workers if workers is not None else cfg.workers
    workers = max(1, workers or os.cpu_count() or 1)
    report = GenerationReport(task, str(out), n_episodes, workers=workers)
    t0 = time.monotonic()
    jobs = []
    for i in range(n_episodes):
        s = episode_seed(seed, task, i)
        done = already_done(out, episode_name(task, i))
        if done is not None:
            report.skipped += 1
            ok = bool(done.get('success'))
            report.episodes.append(EpisodeRecord(i, episode_name(task, i), s, ok,
                                                 done.get('status') == 'complete',
                                                 str(done.get('notes', '')), 0.0, 0.0, True))
            continue
        jobs.append((base_scene, task, i, s, cfg, program, str(out)))
    if progress and report.skipped:
        print(f'[generate {task}] {report.skipped} of {n_episodes} episodes already on disk',
              flush=True)
    workers = min(workers, max(1, len(jobs)))
    report.workers = workers
    if jobs:
        if workers == 1:
            _init_worker(cfg.backend)
            try:
                results = (_run_job(j) for j in jobs)
                _collect(report, results, len(jobs), progress)
            finally:
                _WORKER.pop('backend').close()
        else:
            ctx = mp.get_context('spawn')
            with ctx.Pool(workers, initializer=_init_worker, initargs=(cfg.backend,)) as pool:
                _collect(report, pool.imap_unordered(_run_job, jobs), len(jobs), progress)
    report.episodes.sort(key=lambda e: e.index)
    report.wall_s = time.monotonic() - t0
    return report


def _collect(report: GenerationReport, results, n: int, progress: bool) -> None:
    for k, rec in enumerate(results, 1):
        report.made += 1
        report.successes += rec.success
        report.failures += not rec.success
        report.discarded += not rec.kept
        report.episodes.append(rec)
        if progress:
            state = 'success' if rec.success else f'FAILED ({rec.reason})'
            kept = '' if rec.kept else ', discarded'
            print(f'[generate {report.task}] {k}/{n} {rec.name} {state}{kept} '
                  f'sim {rec.sim_s:.1f} s, wall {rec.wall_s:.1f} s', flush=True)
