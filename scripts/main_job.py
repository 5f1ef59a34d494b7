"""The main job: the paper's experiment on the bench lab, end to end, resumable, with a report.

Stages (each leaves a record under ``<run>/stages``; ``--resume RUN`` skips finished ones):
1. record: the recording graph (bench lab, scripted teleop, recorder) records the real demos
   over ROS, in the lab's demonstration region;
2. twin: the lab captures calibration views, the twin calibrates, aligns and replays the first
   ``real`` demos per task into paired episodes, and generates ``generated`` (+ a few spare)
   trajectories per task over its workspace at the policy's camera rate;
3. ground_truth: the bench lab films every generated trajectory; only those that pass both the
   twin's and the lab's success check are used, the first ``generated`` of them per task, so
   arms B, C, D and E share the trajectories;
4. neural_sim: trained on the paired (real, twin) replays, translates those trajectories into
   pseudo-real episodes;
5. video: the video table, every conditioning mode against the lab's filming of a few
   trajectories, split by the lab's region of their layout;
6. policy: one recipe, the same steps and one normaliser for every arm (A, A', B, C, D, E),
   rolled out in process on the same layout seeds: the success table in the paper's layout with
   Wilson intervals and paired McNemar tests.
This script is the only place that also reads the bench lab's ground truth (the filming, the
twin's and the neural simulator's scores): the stack itself never does.

    scripts/main_job.sh [--scale reduced|paper] [--tasks move_card] [--out output/main_job]
    scripts/main_job.sh --resume output/main_job/<run> [--leave-out B]

A resume takes the options the run started with from its ``run.json``; other values for them
are refused. ``--leave-out`` drops arms a session has no time for (recorded in the run and its
report; ``bench/experiment_extra_arm.py`` adds such an arm to the finished run).
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Collection, Sequence
from datetime import datetime
from pathlib import Path

import report
import yaml

from comsim_core.errors import UserError, cli_main
from comsim_core.experiment.config import ExperimentConfig, ExperimentConfigError, Scale
from comsim_core.experiment.run import Run, run_options
from comsim_core.experiment.table import Trial

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
CAMERAS = ['/cameras/front/image_raw', '/cameras/side/image_raw']
LAB_YAML, REALISM_YAML = ROOT / 'config/bench_lab/lab.yaml', ROOT / 'config/bench_lab/realism.yaml'
STAGES = ('record', 'twin', 'ground_truth', 'neural_sim', 'video', 'policy')


def log(message: str) -> None:
    print(message, flush=True)


def run_tool(cmd: list[str], log_file: Path) -> int:
    """One of the stack's command-line tools (no shell), its output appended to ``log_file``."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    log(f'$ {shlex.join(cmd)}')
    with log_file.open('a') as fh:
        fh.write(f'$ {shlex.join(cmd)}\n')
        fh.flush()
        return subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=ROOT).returncode


# --- 1. record ------------------------------------------------------------------------------


def wait_for_services(node, names: list[str], timeout: float, graph) -> None:
    import rclpy
    deadline = time.monotonic() + timeout
    pending = list(names)
    while pending:
        graph.check_alive()
        if time.monotonic() > deadline:
            raise RuntimeError(f'services {pending} did not come up within {timeout:.0f} s')
        available = {n for n, _ in node.get_service_names_and_types()}
        pending = [n for n in pending if n not in available]
        rclpy.spin_once(node, timeout_sec=0.2)


def resumed_recording(episodes: Path) -> dict:
    """What an interrupted record stage left in ``episodes``: its closed episodes, by (task,
    seed), to keep; an episode it did not close is moved aside to ``.interrupted/`` (a hidden
    folder no reader looks in), and its layout recorded again."""
    from comsim_core.episodes import is_complete
    from comsim_core.episodes.sidecar import SIDECAR_NAME
    from comsim_core.ros.episode_runner import recorded_episodes

    if not episodes.is_dir():
        return {}
    for path in sorted(p.parent for p in episodes.glob(f'*/{SIDECAR_NAME}')):
        if not is_complete(path):       # a bag never closed, or a sidecar never finished
            set_aside(episodes, path, 'record', 'it was not closed')
    done = recorded_episodes(episodes)
    if done:
        log(f'[record] resuming: {len(done)} episodes already recorded')
    return done


def set_aside(out: Path, path: Path, stage: str, why: str) -> None:
    """Move what an earlier try left at ``path`` into ``out/.interrupted/`` (a hidden folder
    no reader looks in), so the stage starts clean and nothing is deleted."""
    if path.exists():
        aside = set_aside_path(out / '.interrupted', path.name)
        aside.parent.mkdir(parents=True, exist_ok=True)
        path.rename(aside)
        log(f'[{stage}] {path}: {why}; moved to {aside}')


def set_aside_path(folder: Path, name: str) -> Path:
    """``folder/name``, or ``name.2``, ``name.3``...: the recorder names the re-recorded episode
    as the one set aside, and a second interruption must not fail on the first's folder."""
    path, n = folder / name, 1
    while path.exists():
        n += 1
        path = folder / f'{name}.{n}'
    return path


def record_stage(out: Path, tasks: list[str], per_task: int, seed: int = 0) -> dict:
    """Record ``per_task`` scripted demos of each task on layout seeds ``seed``, ``seed + 1``...
    through the recording graph (bench lab, teleop, recorder over DDS)."""
    import rclpy

    from comsim_core.ros.episode_runner import EpisodeRunner
    from comsim_core.ros.graph import Graph, graph_from_launch
    from comsim_teleop.report.recording import summarise_recording

    episodes = out / 'episodes'
    done = resumed_recording(episodes)
    overrides = {'recorder': {'output_dir': str(episodes)}}
    specs = graph_from_launch(ROOT / 'launch' / 'record.launch.py', {'bench_lab': 'true'},
                              overrides)
    runner_args = ['--ros-args', '--params-file', str(ROOT / 'config' / 'episode_runner.yaml'),
                   '-p', f'episodes_per_task:={per_task}', '-p', f'tasks:=[{",".join(tasks)}]',
                   '-p', f'seed:={seed}',
                   '-p', 'use_sim_time:=true']       # the bench lab's /clock, as the graph's
    t0 = time.monotonic()
    with Graph(specs, log_dir=out / 'logs') as graph:
        rclpy.init(args=runner_args)
        try:
            runner = EpisodeRunner()
            wait_for_services(runner, ['/bench_lab/reset', '/recorder/start',
                                       '/teleop/start_scripted'], 120.0, graph)
            results = runner.run_all(lambda s: log(f'[record] {s}'), done=done)
            runner.destroy_node()
        finally:
            rclpy.shutdown()
    wall = time.monotonic() - t0
    log(f'[record] {sum(r.success for r in results)}/{len(results)} successful in {wall:.0f} s')
    text = report.recording_section(summarise_recording(episodes), out, CAMERAS,
                                    [(r.task, r.success) for r in results], wall)
    return {'episodes': str(episodes), 'section': text}


# --- 2. twin --------------------------------------------------------------------------------


def generation_config(cfg: ExperimentConfig, out: Path):
    """config/twin/generation.yaml laid out over the workspace at the policy's camera rate,
    failures discarded, appearance randomisation as the experiment says; saved with the run."""
    from comsim_twin.generation.config import GenerationConfig

    base = GenerationConfig.load(GENERATION_YAML)
    gen = base.with_overrides(region='workspace', camera_hz=cfg.camera_hz, failures='discard',
                              randomise=dict(base.randomise) if cfg.appearance_randomisation
                              else {})
    out.mkdir(parents=True, exist_ok=True)
    (out / 'generation.yaml').write_text(yaml.safe_dump(
        {'format': 'comsim-generation/1', **gen.to_dict()}, sort_keys=False))
    return gen


def calibration_session(out: Path, capture) -> Path:
    """``out/calibration_session``: the one an interrupted or failed twin stage closed is kept
    (a resume must not fail on it); one never closed is moved aside and captured again."""
    from comsim_core.episodes import is_complete

    path = out / 'calibration_session'
    if is_complete(path):
        log(f'[twin] calibration session {path} kept from an earlier try')
        return path
    set_aside(out, path, 'twin', 'it was not closed')
    return capture(path)


def twin_stage(out: Path, episodes_dir: Path, cfg: ExperimentConfig, scale: Scale) -> dict:
    from comsim_bench_lab.calibration_rig import capture_calibration
    from comsim_bench_lab.config import LabConfig
    from comsim_bench_lab.scoring import score_twin
    from comsim_policy.arms import successful_episodes
    from comsim_twin.stage import run_twin_stage

    demos = []
    for task in cfg.tasks:
        found = successful_episodes(episodes_dir, [task])
        if len(found) < scale.real:
            raise UserError(f'{episodes_dir}: {len(found)} successful {task} demonstrations, '
                            f'the experiment needs {scale.real}')
        demos += found[:scale.real]       # arm A's demos: the neural simulator's pairs
    set_aside(out, out / 'twin', 'twin', 'an earlier try did not finish')
    t0 = time.monotonic()
    bag = calibration_session(out, lambda path: capture_calibration(
        LAB_YAML, REALISM_YAML, path, cfg.calibration_views, seed=0))
    capture_s = time.monotonic() - t0
    res = run_twin_stage(bag, demos, out / 'twin',
                         sim_per_task=scale.generated + scale.generated_extra,
                         seed=cfg.generation_seed, workers=os.cpu_count() or 1, log=log,
                         generation=generation_config(cfg, out / 'twin'),
                         appearance_variants=pair_variants(cfg),
                         object_masks=weighs_objects(cfg))
    scores = score_twin(LabConfig.load(LAB_YAML),
                        {cam: (res.cameras[cam].K, res.cameras[cam].T_base_camera)
                         for cam in res.calibration},
                        {name: (episodes_dir / name, rep['objects'])
                         for name, rep in res.alignment.items()})
    return {'sim': str(out / 'twin' / 'sim'), 'paired': str(out / 'twin' / 'paired'),
            'paired_appearance': (str(out / 'twin' / 'paired_appearance') if res.variants
                                  else None),
            'generation': res.generation,
            'section': report.twin_section(res, scores, out, capture_s, cfg.calibration_views)}


# --- 3. ground truth ------------------------------------------------------------------------


def ground_truth_stage(out: Path, sim_dir: Path, cfg: ExperimentConfig, scale: Scale) -> dict:
    """The lab films every generated trajectory; the ones both checks pass, per task."""
    from comsim_policy.arms import successful_episodes

    gt_dir = out / 'ground_truth'
    t0 = time.monotonic()
    rc = run_tool([str(BIN / 'comsim-bench-lab-ground-truth'), str(sim_dir), '--out',
                   str(gt_dir), '--rate-hz', f'{cfg.camera_hz:g}', '--no-positions'],
                  out / 'logs' / 'ground_truth.log')
    if rc not in (0, 2):        # 2: some inputs failed (named in the log); the rest is usable
        raise RuntimeError(f'comsim-bench-lab-ground-truth exited {rc}; see '
                           f'{out / "logs" / "ground_truth.log"}')
    chosen, rows = {}, []
    for task in cfg.tasks:
        sims = {p.name for p in successful_episodes(sim_dir, [task])}
        lab_ok = [p.name for p in successful_episodes(gt_dir, [task]) if p.name in sims]
        filmed = len([p for p in (sim_dir / task).glob('*') if (gt_dir / p.name).exists()])
        chosen[task] = lab_ok[:scale.generated]
        rows.append((task, len(sims), filmed, len(lab_ok), len(chosen[task])))
        log(f'[ground_truth] {task}: {len(lab_ok)} of {len(sims)} generated trajectories pass '
            f'the lab check; using {len(chosen[task])}')
    return {'ground_truth': str(gt_dir), 'trajectories': chosen,
            'section': report.ground_truth_section(rows, scale.generated,
                                                   time.monotonic() - t0, rc)}


# --- 4. neural simulator --------------------------------------------------------------------


def neural_sim_stage(out: Path, twin: dict, chosen: list[Path], cfg: ExperimentConfig,
                     scale: Scale) -> dict:
    from comsim_neural_sim.stage import neural_sim_stage as run_stage

    t0 = time.monotonic()
    config = neural_sim_config(cfg)
    ns = run_stage(out / 'neural_sim', Path(twin['paired']), Path(twin['sim']),
                   log=lambda m: log(f'[neural_sim] {m}'), train_steps=scale.neural_sim_steps,
                   config=config,
                   steps=cfg.neural_sim_sample_steps, episodes=chosen,
                   variants_dir=(Path(twin['paired_appearance'])
                                 if twin.get('paired_appearance') else None))
    return {'pseudo_real': str(ns.pseudo_real), 'checkpoint': str(out / 'neural_sim' /
                                                                   'checkpoint'),
            'sim_detail': config.sim_detail,
            'section': report.neural_sim_section(ns, out, time.monotonic() - t0)}


# --- 5. video table -------------------------------------------------------------------------

# (folder, row, guidance mode, keep the sim's detail above the model's resolution)
VIDEO_ROWS = (('action', 'action only', 'action', False), ('sim', 'sim only', 'sim', False),
              ('composed', 'composed', 'composed', False),
              ('composed_detail', 'composed + sim detail', 'composed', True),
              ('joint', 'joint', 'joint', False))


def video_episodes(regions: list[tuple[Path, str, bool]], per_group: int
                   ) -> dict[str, list[Path]]:
    """Up to ``per_group`` trajectories per lab box (``id``, ``ood``) and object colouring:
    the default colours (``id``, ``ood``: what the policy's cells are scored on) and a hue
    the pairs never show (``id recoloured``, ``ood recoloured``); when none lies in either
    box (a small run over the whole workspace), as many from elsewhere (``other``), so the
    video table still has rows. ``regions``: (trajectory, lab region, recoloured)."""
    groups = ('id', 'ood', 'id recoloured', 'ood recoloured', 'other')
    by_group: dict[str, list[Path]] = {g: [] for g in groups}
    for path, region, recoloured in regions:
        group = region if region == 'other' or not recoloured else f'{region} recoloured'
        if len(by_group[group]) < per_group:
            by_group[group].append(path)
    if any(by_group[g] for g in groups[:4]):
        by_group['other'] = []
    return by_group


def video_stage(out: Path, chosen: list[Path], ns: dict, cfg: ExperimentConfig,
                scale: Scale) -> dict:
    """Translate a few trajectories with every conditioning mode and score each against the
    lab's filming of them (with object positions), per lab region of their layout and
    colouring of their objects (``video_episodes``)."""
    import torch

    from comsim_bench_lab.config import LabConfig
    from comsim_bench_lab.ground_truth import GroundTruthRenderer
    from comsim_bench_lab.scoring import layout_region
    from comsim_core.episodes import read_meta
    from comsim_core.episodes.generated_layout import generated_layout, object_starts
    from comsim_neural_sim.evaluation.generated import evaluate_generated
    from comsim_neural_sim.translate.episode import translate_dir
    from comsim_policy.config import PolicyConfig

    pixels = tuple(PolicyConfig.from_yaml(ROOT / scale.policy_config).image_size)
    lab = LabConfig.load(LAB_YAML)
    layouts = {p: generated_layout(p) or {} for p in chosen}
    by_region = video_episodes(
        [(p, layout_region(lab, str(read_meta(p).task), object_starts(layouts[p])),
          bool(layouts[p].get('recoloured'))) for p in chosen],
        max(1, scale.video_episodes // 4))
    picked = [p for eps in by_region.values() for p in eps]
    video = out / 'video'
    with GroundTruthRenderer(LAB_YAML, REALISM_YAML) as renderer:
        for p in picked:
            renderer.render(p, video / 'ground_truth', rate_hz=cfg.camera_hz)
    torch.set_num_threads(1)      # as the neural-sim stage: small ops, and cores shared
    for folder, _, mode, detail in VIDEO_ROWS:
        translate_dir(picked, ns['checkpoint'], video / folder, mode=mode, sim_detail=detail,
                      steps=cfg.neural_sim_sample_steps, log=lambda m: log(f'[video] {m}'),
                      workers=os.cpu_count() or 1)
    rows = []
    for region, eps in by_region.items():
        if not eps:
            continue
        names = sorted(p.name for p in eps)
        for i, (folder, label, _, _) in enumerate(VIDEO_ROWS):
            res = evaluate_generated([video / folder / n for n in names], video / 'ground_truth',
                                     video / f"eval_{folder}_{region.replace(' ', '_')}",
                                     log=lambda m: None, pixels=pixels)
            if i == 0:
                rows.append(video_row(region, 'sim frames', len(eps), res.mean, 'sim'))
            rows.append(video_row(region, label, len(eps), res.mean, 'translated'))
    policy_row = 'composed_detail' if ns.get('sim_detail') else 'composed'
    grids = {r: video / f"eval_{policy_row}_{r.replace(' ', '_')}" / 'generated_grid.png'
             for r, eps in by_region.items() if eps}
    grids = {r: g for r, g in grids.items() if g.is_file()}
    return {'rows': rows, 'episodes': {r: [p.name for p in e] for r, e in by_region.items()},
            'section': report.video_section(rows, grids, out, pixels, ns.get('sim_detail'))}


def video_row(region: str, label: str, episodes: int, mean: dict, which: str) -> dict:
    return {'region': region, 'row': label, 'episodes': episodes,
            'psnr': mean.get(f'{which}_psnr'), 'ssim': mean.get(f'{which}_ssim'),
            'object_px': mean.get(f'{which}_obj_px'), 'found': mean.get(f'{which}_found'),
            'truth_px': mean.get('truth_obj_px')}


# --- 6. policy ------------------------------------------------------------------------------


def policy_stage(out: Path, episodes_dir: Path, data: dict, cfg: ExperimentConfig,
                 scale: Scale, n_generated: int, left_out: Collection[str] = ()) -> dict:
    """Train the run's arms (less those a resume left out: their normaliser stays fitted on
    the data of all the run's arms), roll them out on the run's seeds, tabulate."""
    from comsim_policy.arms import paper_arms, select_arms
    from comsim_policy.evaluation.results import checkpoint_names
    from comsim_policy.stage import policy_stage as run_stage

    run_arms = select_arms(paper_arms(scale.real, n_generated, cfg.generated_share), scale.arms)
    arms = select_arms(run_arms, [a for a in scale.arms if a not in left_out])
    names = {n for ns in data['trajectories'].values() for n in ns}
    sources = {'sim': Path(data['sim']), 'gt': Path(data['ground_truth'])}
    pol = run_stage(out / 'policy_stage', episodes_dir, data.get('pseudo_real') and
                    Path(data['pseudo_real']), log=lambda m: log(f'[policy] {m}'),
                    rollouts=scale.rollouts, tasks=cfg.tasks, regions=('id', 'ood'),
                    config=ROOT / scale.policy_config, arms=arms, normaliser_arms=run_arms,
                    sources=sources,
                    resume=True, allowed={s: names for s in ('sim', 'pseudo_real', 'gt')},
                    unseen_variants={t: cfg.variants(t) for t in cfg.tasks} if scale.unseen
                    else None, max_steps=scale.policy_steps or None,
                    train_workers=os.cpu_count() or 1, evaluation={'seed': cfg.eval_seed})
    letter = {name: t.label.split(':')[0] for name, t in
              zip(checkpoint_names([t.path for t in pol.trained]).values(), pol.trained,
                  strict=True)}
    trials = [dataclasses.asdict(Trial(letter[r.checkpoint], r.task,
                                       r.region if not r.variant else f'unseen {r.variant}',
                                       r.seed, r.success, max(r.moved_m.values(), default=None)))
              for r in pol.evaluation.rollouts]
    labels = {a.label.split(':')[0]: a.label for a in arms}
    curves = report.training_curves(pol.trained, out / 'pictures')
    return {'trials': trials, 'labels': labels,
            'section': report.experiment_section([Trial(**t) for t in trials], labels, out,
                                                 curves) + '\n' + report.policy_section(pol, out)}


# --- the run --------------------------------------------------------------------------------


GENERATION_YAML = ROOT / 'config' / 'twin' / 'generation.yaml'


def config_digests(cfg: ExperimentConfig, scale: Scale) -> dict[str, str]:
    """The configs later stages read when they start, by content: a recipe edited between
    two sessions of one run would train its remaining arms differently from the finished
    ones (and a resumed arm keeps its saved recipe), so such a resume is refused."""
    import hashlib

    paths = (ROOT / scale.policy_config, ROOT / cfg.neural_sim_config, GENERATION_YAML)
    return {str(p.relative_to(ROOT) if p.is_relative_to(ROOT) else p):
            hashlib.sha256(p.read_bytes()).hexdigest()[:16] for p in paths}


def settings(args, cfg: ExperimentConfig, scale: Scale) -> dict:
    """What makes two runs the same experiment (a resumed run must match them)."""
    return {'scale': args.scale, 'tasks': cfg.tasks, 'counts': dataclasses.asdict(scale),
            'camera_hz': cfg.camera_hz, 'appearance_randomisation': cfg.appearance_randomisation,
            'generated_share': cfg.generated_share, 'generation_seed': cfg.generation_seed,
            'eval_seed': cfg.eval_seed, 'reuse_episodes': str(args.reuse_episodes or ''),
            'configs': config_digests(cfg, scale),
            # absent when 0 or empty, as in the runs made before the options: those resume
            **({'pair_appearance_variants': variants} if (variants := pair_variants(cfg)) else {}),
            **({'record_seed': cfg.record_seed} if cfg.record_seed else {}),
            **({'neural_sim_overrides': dict(cfg.neural_sim_overrides)}
               if cfg.neural_sim_overrides else {})}


def neural_sim_config(cfg: ExperimentConfig):
    """The experiment's neural-simulator config: ``neural_sim_config`` with
    ``neural_sim_overrides`` applied (an unknown key or a bad value: one clear line)."""
    from comsim_neural_sim.config import NeuralSimConfig

    base = NeuralSimConfig.from_yaml(ROOT / cfg.neural_sim_config)
    if not cfg.neural_sim_overrides:
        return base
    return NeuralSimConfig.from_dict({**base.to_dict(), **cfg.neural_sim_overrides},
                                     f'{cfg.source}: neural_sim_overrides')


def weighs_objects(cfg: ExperimentConfig) -> bool:
    """Whether the neural simulator weighs objects in its loss: then the twin's replays write
    the object masks it needs."""
    return neural_sim_config(cfg).object_loss_weight != 1.0


def pair_variants(cfg: ExperimentConfig) -> int:
    """Appearance variants of each demonstration's replay: none without randomisation (they
    would repeat the pair)."""
    return cfg.pair_appearance_variants if cfg.appearance_randomisation else 0


RUN_OPTIONS = ('config', 'scale', 'tasks', 'real', 'generated', 'rollouts', 'arms',
               'policy_steps', 'neural_sim_steps', 'generated_share', 'reuse_episodes')
PATH_OPTIONS = ('config', 'reuse_episodes')


def stored_options(args) -> dict:
    """The options that make the run, as ``run.json`` keeps them (so a resume needs only the
    folder); session options (--resume, --until, --leave-out, --out) are not among them. Paths
    inside the repository are kept relative to it, so another clone can resume the run."""
    def kept(path: Path) -> str:
        path = Path(path).resolve()
        return str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)

    return {k: kept(v) if k in PATH_OPTIONS and v is not None else v
            for k, v in vars(args).items() if k in RUN_OPTIONS}


def parse_args(argv=None, stored: dict | None = None):
    """The command line; with ``stored`` (a run's options) those fill what it does not give."""
    namespace = argparse.Namespace(**{k: ROOT / v if k in PATH_OPTIONS and v is not None else v
                                      for k, v in (stored or {}).items() if k in RUN_OPTIONS})
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--out', type=Path, default=ROOT / 'output' / 'main_job',
                    help='a new run goes into OUT/<date-time>')
    ap.add_argument('--resume', type=Path, help='continue this run folder where it stopped')
    ap.add_argument('--config', type=Path, default=ROOT / 'config' / 'experiment.yaml')
    ap.add_argument('--scale', default='reduced', help='a scale of the config (reduced, paper)')
    ap.add_argument('--tasks', nargs='+', help='default: the config\'s')
    ap.add_argument('--real', type=int, help='override the scale: real demos per arm')
    ap.add_argument('--generated', type=int, help='override: generated trajectories per task')
    ap.add_argument('--rollouts', type=int, help='override: rollouts per cell')
    ap.add_argument('--arms', nargs='+', help='override: arm letters (A A\' B C D E)')
    ap.add_argument('--policy-steps', type=int, help='override: training steps per arm')
    ap.add_argument('--neural-sim-steps', type=int, help='override: neural-sim training steps')
    ap.add_argument('--generated-share', type=float,
                    help="override the config's generated_share: the share of a co-trained "
                         'arm\'s samples drawn from generated data, in (0, 1)')
    ap.add_argument('--until', choices=STAGES, help='stop after this stage (resume later)')
    ap.add_argument('--reuse-episodes', type=Path,
                    help='skip recording and use these recorded episodes (for development)')
    ap.add_argument('--leave-out', nargs='+', metavar='ARM', default=[],
                    help='with --resume: arms of the run not to train or roll out (when they '
                         'will not fit the time left; bench/experiment_extra_arm.py adds one '
                         'later); the normaliser stays fitted on the data of all its arms')
    return ap.parse_args(argv, namespace)


def experiment_settings(args) -> tuple[ExperimentConfig, Scale]:
    cfg = ExperimentConfig.load(args.config)
    if args.tasks:
        cfg.tasks = list(args.tasks)
    if args.generated_share is not None:
        try:
            cfg = dataclasses.replace(cfg, generated_share=args.generated_share)
        except ExperimentConfigError as exc:
            raise UserError(f'--generated-share: {getattr(exc, "detail", exc)}') from None
    changes = {k: v for k, v in (('real', args.real), ('generated', args.generated),
                                 ('rollouts', args.rollouts), ('arms', args.arms),
                                 ('policy_steps', args.policy_steps),
                                 ('neural_sim_steps', args.neural_sim_steps)) if v is not None}
    try:
        scale = dataclasses.replace(cfg.scale(args.scale), **changes)
    except ValueError as exc:
        raise UserError(f'{args.config}: scales.{args.scale} with the command line\'s '
                        f'overrides: {exc}') from None
    cfg.check_seeds(scale)
    return cfg, scale


def run_dir(args) -> Path:
    if args.resume:             # main read its run.json: a run folder
        return args.resume
    out = args.out / datetime.now().strftime('%Y%m%d-%H%M%S')
    out.mkdir(parents=True)
    latest = args.out / 'latest'
    if latest.is_symlink() or latest.exists():
        latest.unlink()
    latest.symlink_to(out.name)
    return out


def leave_out(run: Run, scale: Scale, letters: Sequence[str], policy_done: bool) -> set[str]:
    """The arms this run leaves out: those earlier resumes left out and ``letters``, which
    are recorded as an amendment (the settings, and the normaliser, keep every arm)."""
    before = {a for m in run.amendments() for a in m.get('leave_out', [])}
    new = sorted(set(letters) - before)
    if not new:
        return before
    unknown = [a for a in new if a not in scale.arms]
    if unknown:
        raise UserError(f'--leave-out: {unknown} are not arms of this run; expected some of '
                        f'{scale.arms}')
    if not set(scale.arms) - before - set(new):
        raise UserError(f'--leave-out: {new} would leave no arm of {scale.arms} to train')
    if policy_done:
        raise UserError(f'--leave-out: the policy stage of {run.dir} has finished; nothing is '
                        'left to leave out')
    run.amend({'leave_out': new})
    return before | set(new)


@cli_main('main_job')
def main(argv=None) -> int:
    args = parse_args(argv)
    if args.leave_out and not args.resume:
        raise UserError('--leave-out: only with --resume RUN (a new run names its arms with '
                        '--arms)')
    if args.resume:
        args = parse_args(argv, run_options(args.resume))
    cfg, scale = experiment_settings(args)
    out = run_dir(args)
    run = Run(out, settings(args, cfg, scale), stored_options(args))
    left_out = leave_out(run, scale, args.leave_out, run.done('policy'))
    (out / 'commands.txt').open('a').write(shlex.join([sys.executable, *sys.argv]) + '\n')
    log(f'[main_job] run {out}: {args.scale} scale, tasks {cfg.tasks}, {scale}')
    results: dict[str, dict] = {}

    def stage(name: str, fn) -> dict | None:
        results[name] = run.stage(name, fn, log)
        write_report(out, run, cfg, scale, args, results)
        return None if args.until == name else results[name]

    if args.reuse_episodes:
        rec = stage('record', lambda: {'episodes': str(args.reuse_episodes.resolve()),
                                       'section': report.reused_recording_section(
                                           args.reuse_episodes.resolve())})
    else:
        rec = stage('record', lambda: record_stage(out, cfg.tasks, scale.recorded,
                                                        cfg.record_seed))
    if rec is None:
        return 0
    episodes = Path(rec['episodes'])
    twin = stage('twin', lambda: twin_stage(out, episodes, cfg, scale))
    if twin is None:
        return 0
    gt = stage('ground_truth', lambda: ground_truth_stage(out, Path(twin['sim']), cfg, scale))
    if gt is None:
        return 0
    chosen = [Path(twin['sim']) / task / name for task, names in gt['trajectories'].items()
              for name in names]
    n_generated = min(len(v) for v in gt['trajectories'].values())
    ns = stage('neural_sim', lambda: neural_sim_stage(out, twin, chosen, cfg, scale))
    if ns is None:
        return 0
    if stage('video', lambda: video_stage(out, chosen, ns, cfg, scale)) is None:
        return 0
    stage('policy', lambda: policy_stage(out, episodes, {**twin, **gt, **ns}, cfg, scale,
                                         n_generated, left_out))
    log(f'report: {out / "report.md"}')
    return 0


def write_report(out: Path, run: Run, cfg: ExperimentConfig, scale: Scale, args,
                 results: dict[str, dict]) -> Path:
    """The report so far (rewritten after each stage, so a failed stage keeps the others)."""
    path = out / 'report.md'
    commands = (out / 'commands.txt').read_text().splitlines() if (out / 'commands.txt'
                                                                    ).exists() else []
    path.write_text(report.experiment_report(out, args.scale, cfg, scale, results,
                                             run.timings(), commands, run.amendments()))
    return path


if __name__ == '__main__':
    sys.exit(main())
