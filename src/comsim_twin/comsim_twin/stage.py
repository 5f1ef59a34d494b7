"""The twin stage of the pipeline: calibration bag → cameras, recorded episodes → aligned scenes
→ paired episodes, aligned scenes → generated sim episodes.

Uses only what a lab has: a calibration session, recorded episodes (task and variant from their
metadata) and the measured object sheet. Scoring against the bench lab's ground truth is the
caller's business (comsim_bench_lab.scoring, run by scripts/main_job.py), never this module's.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from comsim_core.episodes import Episode
from comsim_twin.alignment import align_episode, load_sheet
from comsim_twin.backends import make_backend
from comsim_twin.calibration import calibrate_from_bag, load_twin_camera
from comsim_twin.generation.config import GenerationConfig
from comsim_twin.generation.randomise import appearance_variant, episode_seed
from comsim_twin.generation.runner import generate
from comsim_twin.replay import gap_report, is_complete_paired, paired_path, replay_episode
from comsim_twin.scene import TwinCamera, TwinScene


@dataclass
class TwinStageResult:
    """Cameras and per-episode reports of the stage; the main job's report renders them."""

    cameras: dict[str, TwinCamera]
    calibration: dict[str, dict]
    scenes: dict[str, Path] = field(default_factory=dict)          # episode name -> scene
    alignment: dict[str, dict] = field(default_factory=dict)       # episode name -> report
    paired: dict[str, Path] = field(default_factory=dict)          # episode name -> paired
    variants: dict[str, list[Path]] = field(default_factory=dict)  # ... -> appearance variants
    gaps: dict[str, dict] = field(default_factory=dict)            # episode name -> gap
    generation: dict[str, dict] = field(default_factory=dict)      # task -> summary
    seconds: dict[str, float] = field(default_factory=dict)        # step -> wall time


def episode_task(path: Path) -> tuple[str, str | None]:
    """Task and variant of a recorded episode from its metadata (the recorder stores both)."""
    with Episode.open(path) as ep:
        meta = ep.meta
    if not meta.task:
        raise ValueError(f'{path}: episode metadata names no task')
    return meta.task, (meta.variant or None)


def calibrate(calibration_bag: Path, out: Path) -> tuple[dict[str, TwinCamera], dict]:
    reports = calibrate_from_bag(calibration_bag, out)
    cameras = {cam: load_twin_camera(r['file'], r['topic']) for cam, r in reports.items()}
    return cameras, reports


def replay_variants(path: Path, scene: TwinScene, backend, out_dir: Path, n: int,
                    generation: GenerationConfig, seed: int, mode: str = 'dynamic',
                    scene_file: Path | None = None, object_masks: bool = False) -> list[Path]:
    """Replay a recorded episode ``n`` more times, each in the aligned scene with its look
    redrawn as generation draws it (``appearance_variant``); one already on disk is kept.
    ``object_masks``: each render's object ids beside it (``replay_episode``)."""
    out = []
    for k in range(1, n + 1):
        done = paired_path(out_dir, path, mode, k)
        if not is_complete_paired(done):
            look_seed = episode_seed(seed, path.name, k)
            rnd = appearance_variant(scene, generation, look_seed)
            done = replay_episode(path, rnd.scene, backend, mode=mode, out_dir=out_dir,
                                  scene_file=scene_file, variant=k,
                                  light_scale=rnd.light_scale,
                                  appearance={'seed': look_seed, **rnd.params},
                                  object_masks=object_masks)
        out.append(done)
    return out


def run_twin_stage(calibration_bag: Path, episodes: list[Path], out: Path,
                   sim_per_task: int = 6, mode: str = 'dynamic', workers: int = 2,
                   seed: int = 0, log=print, generation: GenerationConfig | None = None,
                   appearance_variants: int = 0, object_masks: bool = False
                   ) -> TwinStageResult:
    """Calibrate, align every episode, replay it in the twin, generate sim episodes per task.

    ``generation`` replaces config/twin/generation.yaml (the experiment lays its episodes out
    over the workspace, at the policy's camera rate, with or without appearance randomisation).
    ``appearance_variants`` n > 0 replays every episode n more times into
    ``out/paired_appearance``, its look redrawn by generation's ``randomise`` each time.
    ``object_masks``: the replays write each render's object ids beside it (for a neural
    simulator that weighs objects in its loss).
    """
    out = Path(out)
    t0 = time.monotonic()
    cameras, calib = calibrate(calibration_bag, out / 'calibration')
    result = TwinStageResult(cameras, calib)
    result.seconds['calibration'] = time.monotonic() - t0
    log(f'[twin] calibrated {sorted(cameras)} in {result.seconds["calibration"]:.0f} s')

    sheet = load_sheet()
    backend = make_backend('mujoco')
    base_scenes: dict[str, TwinScene] = {}
    t_align = t_replay = 0.0
    try:
        for path in episodes:
            task, variant = episode_task(path)
            t1 = time.monotonic()
            scene, report = align_episode(path, cameras, sheet, task, variant, backend=backend)
            scene_file = scene.save(out / 'scenes' / f'{path.name}.yaml')
            t_align += time.monotonic() - t1
            result.scenes[path.name] = scene_file
            result.alignment[path.name] = report.to_dict()
            base_scenes.setdefault(task, scene)
            t1 = time.monotonic()
            paired = replay_episode(path, scene, backend, mode=mode, out_dir=out / 'paired',
                                    scene_file=scene_file, object_masks=object_masks)
            result.paired[path.name] = paired
            result.gaps[path.name] = gap_report(paired)
            if appearance_variants > 0:
                result.variants[path.name] = replay_variants(
                    path, scene, backend, out / 'paired_appearance', appearance_variants,
                    generation or GenerationConfig.load(), seed, mode, scene_file,
                    object_masks)
            t_replay += time.monotonic() - t1
            log(f'[twin] {path.name}: aligned ({len(report.objects)} objects), replayed '
                f'({mode}, {1 + appearance_variants} looks), '
                f'PSNR {result.gaps[path.name].get("psnr_mean", float("nan")):.1f} dB')
    finally:
        backend.close()
    result.seconds['alignment'] = t_align
    result.seconds['replay'] = t_replay

    t1 = time.monotonic()
    for task, scene in base_scenes.items():
        report = generate(scene, task, sim_per_task, out / 'sim' / task, seed=seed,
                          workers=workers, config=generation, progress=False)
        result.generation[task] = {'requested': report.requested, 'made': report.made,
                                   'successes': report.successes, 'failures': report.failures,
                                   'discarded': report.discarded, 'wall_s': report.wall_s,
                                   'out_dir': report.out_dir}
        log(f'[twin] generated {task}: {report.successes}/{report.made} successful '
            f'in {report.wall_s:.0f} s')
    result.seconds['generation'] = time.monotonic() - t1
    return result
