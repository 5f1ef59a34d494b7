"""Neural-sim variants scored against the bench lab's ground truth of a main-job run's video
episodes: which resolution and pixel skip keep the objects where the lab films them?

Each ``--variant NAME KEY=VALUE...`` overrides ``config/neural_sim.yaml``; every variant is
trained on the run's paired replays (the same held-out episode as the neural-sim stage) for
``--steps``, translates the run's video-table trajectories (composed guidance), and is scored
in the policy's pixels against the run's ground truth per lab region: PSNR, SSIM, objects
found, object px. The run's own checkpoint, translating as its video stage did (``composed +
sim detail``) and without the sim's detail, is scored beside them as the session's baseline.
Reads only the run's folders; writes under ``--work``.

The policy is scored on the lab's own object colours, while a run's video table (before it
was split by colouring) may hold mostly recoloured trajectories: ``--plain-per-region N`` adds
N trajectories per lab region whose objects keep their default colours (groups ``id plain``,
``ood plain``), filmed by the bench lab here (with object positions) once, under
``--work/ground_truth``.

    .venv/bin/python bench/neural_sim_resolution.py --run /work/paper/latest --steps 1000 \\
        --variant res96 height=96 width=128 patch_size=16 sim_detail=false \\
        --variant res96_conv height=96 width=128 patch_size=16 sim_detail=false skip_kernel=3

``--pair-variants K`` replays each of the run's paired demonstrations K more times in its
aligned scene with the twin's look redrawn as the run's generation drew it (the lab footage the
target each time), under ``--work/paired_appearance``; a variant with ``pairs=appearance``
trains on those beside the run's pairs. ``--translate-all NAME`` then translates every
trajectory the run's arms use with that variant, as the neural-sim stage did, into
``--work/NAME/pseudo_real`` (for ``bench/experiment_extra_arm.py --pseudo-real``).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path

import torch
import yaml
from provenance import ROOT, add_out_argument, torch_machine, write_result

from comsim_core.errors import UserError, cli_main
from comsim_core.experiment.run import run_settings, stage_record, stage_result
from comsim_neural_sim.config import NeuralSimConfig
from comsim_neural_sim.data.clips import load_paired_dir, load_paired_episode
from comsim_neural_sim.evaluation.generated import evaluate_generated
from comsim_neural_sim.stage import paired_cameras, training_clips
from comsim_neural_sim.training.train import train
from comsim_neural_sim.translate.episode import translate_dir
from comsim_policy.config import PolicyConfig

FIELDS = {f.name for f in dataclasses.fields(NeuralSimConfig)}


PAIRS = ('run', 'appearance')     # a variant's training pairs: the run's, or + appearance variants


def parse_variant(tokens: list[str]) -> tuple[str, dict]:
    """``NAME key=value ...`` -> (name, overrides), values parsed as YAML scalars; the key
    ``pairs`` (``run`` or ``appearance``) picks the training pairs, not a config value."""
    name, changes = tokens[0], {}
    for tok in tokens[1:]:
        key, sep, value = tok.partition('=')
        if not sep:
            raise UserError(f'--variant {name}: {tok!r} is not key=value')
        if key == 'pairs':
            if value not in PAIRS:
                raise UserError(f'--variant {name}: pairs={value!r}, expected one of {PAIRS}')
            changes[key] = value
            continue
        if key not in FIELDS:
            raise UserError(f'--variant {name}: {key!r} is not a key of config/neural_sim.yaml '
                            f'(expected one of {", ".join(sorted(FIELDS))})')
        changes[key] = yaml.safe_load(value)
    return name, changes


def plain_episodes(run: Path, sim_dir: Path, exclude: set[str], per_region: int
                   ) -> dict[str, list[str]]:
    """Up to ``per_region`` of the run's filmed trajectories per lab region (``id``, ``ood``)
    whose objects were not recoloured, in name order, none of ``exclude``."""
    from comsim_bench_lab.config import LabConfig
    from comsim_bench_lab.scoring import layout_region
    from comsim_core.episodes import read_meta
    from comsim_core.episodes.generated_layout import generated_layout, object_starts

    lab = LabConfig.load(ROOT / 'config/bench_lab/lab.yaml')
    picked: dict[str, list[str]] = {'id plain': [], 'ood plain': []}
    if stage_record(run, 'ground_truth').is_file():   # the trajectories the arms train on
        used = stage_result(run, 'ground_truth')['trajectories']
    else:                                            # before it: the twin's successful ones
        from comsim_policy.arms import successful_episodes
        used = {d.name: [p.name for p in successful_episodes(d)]
                for d in sorted(sim_dir.iterdir()) if d.is_dir()}
    for task, names in used.items():
        for name in sorted(set(names) - exclude):
            path = sim_dir / task / name
            layout = generated_layout(path) or {}
            if layout.get('recoloured', True):
                continue
            region = layout_region(lab, str(read_meta(path).task), object_starts(layout))
            group = picked.get(f'{region} plain')
            if group is not None and len(group) < per_region:
                group.append(name)
    return picked


def appearance_pairs(run: Path, paired: Path, out: Path, n: int) -> list[Path]:
    """Every pair of the run replayed ``n`` more times with the twin's look redrawn (the run's
    generation config and seed; its aligned scenes), with the object masks a variant with an
    ``object_loss_weight`` needs; kept where already on disk. Returns those ``n`` per pair
    only: a folder reused with another ``n`` holds others."""
    from comsim_core.episodes import find_episodes
    from comsim_core.episodes.sidecar import read_sidecar
    from comsim_twin.backends import make_backend
    from comsim_twin.generation.config import GenerationConfig
    from comsim_twin.scene import TwinScene
    from comsim_twin.stage import replay_variants

    generation = GenerationConfig.load(run / 'twin' / 'generation.yaml')
    seed = int(run_settings(run)['generation_seed'])
    backend = make_backend('mujoco')
    made = []
    try:
        for pair in find_episodes(paired):
            side = read_sidecar(pair) or {}
            scene_file = Path(side['twin_scene_file'])
            made += replay_variants(Path(side['source_episode']), TwinScene.load(scene_file),
                                    backend, out, n, generation, seed, side['mode'], scene_file,
                                    object_masks=True)
    finally:
        backend.close()
    return made


def film(sims: list[Path], truth: Path, camera_hz: float) -> None:
    """The bench lab's filming of ``sims`` (with object positions) into ``truth``; an
    episode already filmed there is kept."""
    from comsim_bench_lab.ground_truth import GroundTruthRenderer

    todo = [p for p in sims if not (truth / p.name / 'positions.json').is_file()]
    if todo:
        with GroundTruthRenderer(ROOT / 'config/bench_lab/lab.yaml',
                                 ROOT / 'config/bench_lab/realism.yaml') as renderer:
            for p in todo:
                renderer.render(p, truth, rate_hz=camera_hz)


def score(folder: Path, names_by_region: dict[str, list[str]], truths: dict[str, Path],
          work: Path, pixels: tuple[int, int]) -> dict:
    """Per region: the evaluator's mean row (translated and sim columns) against that
    region's ground truth; its per-episode rows go to ``work/eval_<region>``."""
    out = {}
    for region, names in names_by_region.items():
        if not names:
            continue
        res = evaluate_generated([folder / n for n in names], truths[region],
                                 work / f"eval_{region.replace(' ', '_')}", log=lambda m: None,
                                 pixels=pixels)
        out[region] = {k: res.mean.get(k) for k in (
            'translated_psnr', 'translated_ssim', 'translated_found', 'translated_obj_px',
            'sim_psnr', 'sim_ssim', 'sim_found', 'sim_obj_px')}
    return out


@cli_main('neural_sim_resolution')
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--run', type=Path, required=True, help='a main-job run folder')
    ap.add_argument('--work', type=Path, default=Path('/tmp/neural_sim_resolution'))
    ap.add_argument('--steps', type=int, default=1000)
    ap.add_argument('--sample-steps', type=int, default=4)
    ap.add_argument('--train-only', action='store_true',
                    help='train the variants (needs only the twin stage) and stop')
    ap.add_argument('--plain-per-region', type=int, default=0, metavar='N',
                    help='also score N trajectories per lab region with default object colours')
    ap.add_argument('--variant', nargs='+', action='append', default=[], metavar='NAME K=V')
    ap.add_argument('--pair-variants', type=int, default=0, metavar='K',
                    help='replays per pair with the look redrawn, for variants with '
                         'pairs=appearance')
    ap.add_argument('--translate-all', metavar='NAME',
                    help="translate the trajectories the run's arms use with this variant")
    add_out_argument(ap, __file__)
    args = ap.parse_args(argv)
    variants = [parse_variant(tokens) for tokens in args.variant]   # a typo stops it here
    if any(c.get('pairs') == 'appearance' for _, c in variants) and args.pair_variants < 1:
        raise UserError('--variant ... pairs=appearance needs --pair-variants K >= 1')
    if args.translate_all and args.translate_all not in {n for n, _ in variants}:
        raise UserError(f'--translate-all {args.translate_all}: no --variant of that name')
    if args.translate_all and (args.train_only
                               or not stage_record(args.run, 'ground_truth').is_file()):
        raise UserError('--translate-all needs the run\'s filming stage finished and no '
                        '--train-only: it translates the trajectories the arms use')
    torch.set_num_threads(int(os.environ.get('OMP_NUM_THREADS', '1')))
    run = args.run.resolve()
    # the video table's trajectories, where the run has made its video stage
    names_by_region = ({} if args.train_only or not stage_record(run, 'video').is_file()
                       else stage_result(run, 'video')['episodes'])
    if not (names_by_region or args.train_only or args.plain_per_region > 0):
        raise UserError(f'{run}: no video stage yet; score --plain-per-region N trajectories')
    twin = stage_result(run, 'twin')
    sim_dir, paired = Path(twin['sim']), Path(twin['paired'])
    truths = {r: run / 'video' / 'ground_truth' for r in names_by_region}
    if args.plain_per_region > 0 and not args.train_only:
        plain = plain_episodes(run, sim_dir, {n for ns in names_by_region.values() for n in ns},
                               args.plain_per_region)
        film([next(sim_dir.glob(f'*/{n}')) for ns in plain.values() for n in ns],
             args.work / 'ground_truth', float(run_settings(run)['camera_hz']))
        names_by_region = {**names_by_region, **plain}
        truths.update({r: args.work / 'ground_truth' for r in plain})
    pixels = tuple(PolicyConfig.from_yaml(ROOT / 'config' / 'policy_train.yaml').image_size)
    sims = [next(sim_dir.glob(f'*/{n}')) for names in names_by_region.values() for n in names]
    results = {'run': str(run), 'steps': args.steps, 'pixels': list(pixels),
               'episodes': names_by_region, 'variants': {}}
    if not args.train_only and stage_record(run, 'neural_sim').is_file():
        # the run's checkpoint translates as its video stage did (composed, the sim's detail)
        # and, as a second row, without the sim's detail
        for label, detail, sub in (('run: composed + sim detail', True, 'run'),
                                   ('run: composed', False, 'run_no_detail')):
            folder = args.work / sub / 'composed'
            translate_dir(sims, stage_result(run, 'neural_sim')['checkpoint'], folder,
                          mode='composed', steps=args.sample_steps, sim_detail=detail,
                          log=lambda m: None)
            results['variants'][label] = {'scores': score(
                folder, names_by_region, truths, args.work / sub, pixels)}
    # the pairs are read once: variants change the model, not the data
    base = NeuralSimConfig.from_yaml(ROOT / 'config' / 'neural_sim.yaml')
    base = base.replace(cameras=paired_cameras(paired))
    clips = load_paired_dir(paired, base.cameras, base.command_topic)
    held = sorted({c.name for c in clips})[-1]
    extra = []
    if args.pair_variants > 0:
        t0 = time.perf_counter()
        extra = [load_paired_episode(p, cam, base.command_topic) for p in appearance_pairs(
            run, paired, args.work / 'paired_appearance', args.pair_variants)
            for cam in base.cameras]
        results['pair_variants'] = {'per_pair': args.pair_variants, 'clips': len(extra),
                                    'replay_s': round(time.perf_counter() - t0)}
    for name, changes in variants:
        changes = dict(changes)
        pairs = changes.pop('pairs', 'run')
        train_clips = training_clips(clips + (extra if pairs == 'appearance' else []), held)
        cfg = base.replace(**changes).replace(
            action_dim=int(clips[0].actions.shape[1]), sample_every=10**9,
            save_every=10**9, log_every=100)
        ckpt = args.work / name / 'checkpoint'
        trained = args.work / name / 'trained.json'     # a finished training is not redone
        if not trained.is_file():
            t0 = time.perf_counter()
            res = train(cfg, train_clips, ckpt, steps=args.steps, log=lambda m: None)
            trained.write_text(json.dumps({'train_s': round(time.perf_counter() - t0, 1),
                                           'loss_first': res.first_loss,
                                           'loss_last': res.last_loss, 'steps': args.steps,
                                           'pairs': pairs, 'train_clips': len(train_clips)}))
        fit = json.loads(trained.read_text())
        made = {k: fit.get(k) for k in ('steps', 'pairs', 'train_clips')}
        if made != {'steps': args.steps, 'pairs': pairs, 'train_clips': len(train_clips)} and \
                fit.get('pairs') is not None:
            raise UserError(f'{trained}: variant {name} was trained with {made}, not with these '
                            f'options; use another --work or variant name')
        print(name, 'trained', fit, flush=True)
        if args.train_only:
            continue
        t0 = time.perf_counter()
        folder = args.work / name / 'composed'
        translate_dir(sims, ckpt, folder, mode='composed', steps=args.sample_steps,
                      log=lambda m: None)
        translate_s = time.perf_counter() - t0
        results['variants'][name] = {
            'changes': changes, **fit,
            'translate_s_per_episode': round(translate_s / len(sims), 2),
            'scores': score(folder, names_by_region, truths, args.work / name, pixels)}
        print(name, json.dumps(results['variants'][name]), flush=True)
        if cfg.sim_detail:      # the same model without the sim's detail: what the detail adds
            bare = args.work / name / 'composed_no_detail'
            translate_dir(sims, ckpt, bare, mode='composed', steps=args.sample_steps,
                          sim_detail=False, log=lambda m: None)
            results['variants'][f'{name} (no sim detail)'] = {'scores': score(
                bare, names_by_region, truths, args.work / name / 'no_detail', pixels)}
    if args.train_only:
        return 0
    if args.translate_all:
        t0 = time.perf_counter()
        chosen = [next(sim_dir.glob(f'*/{n}')) for ns in
                  stage_result(run, 'ground_truth')['trajectories'].values() for n in ns]
        translate_dir(chosen, args.work / args.translate_all / 'checkpoint',
                      args.work / args.translate_all / 'pseudo_real',
                      steps=args.sample_steps,
                      log=lambda m: None, workers=os.cpu_count() or 1)
        results['translate_all'] = {'variant': args.translate_all, 'episodes': len(chosen),
                                    'wall_s': round(time.perf_counter() - t0)}
    write_result(args.out, results, torch_machine())
    for name, v in results['variants'].items():
        for region, s in v['scores'].items():
            print(f"{name:28s} {region:9s} PSNR {s['translated_psnr']:.2f} SSIM "
                  f"{s['translated_ssim']:.3f} found {s['translated_found'] or 0:.0%} "
                  f"px {s['translated_obj_px'] or float('nan'):.1f}  (sim {s['sim_psnr']:.2f})")
    return 0


if __name__ == '__main__':
    sys.exit(main())
