"""Scene alignment accuracy against the bench lab's ground truth.

For several layouts (tasks x variants x seeds, ID and OOD regions) the bench lab renders each
camera with its realism on; the frames are written as a small episode (EpisodeBagWriter) and
align_episode reads that bag, as it would a recorded one. Cameras: the bench lab's TRUE
calibration (camera_info), so the figures measure alignment alone, not calibration. Reports
position/yaw/colour errors per object, layouts where an object was not found, and a summary.

With --episodes the layouts are recorded episodes instead (the main job's demos, say), aligned
with the cameras of --calibration (the twin's calibration) from their own first frames, as the
twin stage does, and scored against the lab reset to each episode's recorded layout.

    .venv/bin/python bench/alignment_accuracy.py [--seeds 2] [--backend projection|mujoco]
        [--first-seed 0] [--episodes RUN/episodes --calibration RUN/twin/calibration]
        [--foreground SIGMAS MIN_CHROMA]
        [--out bench/results/alignment_accuracy.json]
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from comsim_bench_lab.config import LabConfig
from comsim_bench_lab.lab import BenchLab
from comsim_bench_lab.realism import RealismProfile
from comsim_core.episodes.encode import rgb8_image_cdr
from comsim_core.episodes.topics import TopicSpec
from comsim_core.episodes.writer import EpisodeBagWriter
from comsim_twin.alignment import align_episode, load_sheet
from comsim_twin.alignment.colours import delta_e76, rgb_distance
from comsim_twin.alignment.errors import AlignmentError
from comsim_twin.alignment.localise import wrap_yaw, yaw_period

ROOT = Path(__file__).resolve().parents[1]
CONFIG_DIR = ROOT / 'config' / 'bench_lab'
sys.path.insert(0, str(ROOT / 'bench'))   # tests load this file by path
from provenance import add_out_argument, machine, use_fixtures, write_result  # noqa: E402

use_fixtures()
from fixtures.twin_scenes import true_cameras  # noqa: E402

LAYOUTS = [('stack_blocks', 'default'), ('stack_blocks', 'large'), ('stack_blocks', 'cylinders'),
           ('stack_blocks', 'green_yellow'), ('move_card', 'default'), ('move_card', 'red'),
           ('move_card', 'blue'), ('shake_bottle', 'default'), ('shake_bottle', 'tall'),
           ('shake_bottle', 'amber'), ('shake_bottle', 'blue')]


def make_lab(realism: bool = True) -> BenchLab:
    cfg = LabConfig.load(CONFIG_DIR / 'lab.yaml')
    prof = RealismProfile.load(CONFIG_DIR / 'realism.yaml') if realism else None
    return BenchLab(cfg, prof)


def write_first_frames(lab: BenchLab, path: Path, frames: int = 2,
                       cameras: list[str] | None = None) -> Path:
    """A small episode bag: `frames` realism renders per camera of the lab's current state."""
    cameras = cameras if cameras is not None else lab.camera_names
    topics = [TopicSpec(f'/cameras/{c}/image_raw', 'sensor_msgs/msg/Image', 30.0)
              for c in cameras]
    writer = EpisodeBagWriter(path, topics)
    writer.open()
    for i in range(frames):
        t_ns = 10**9 + i * 33_333_333
        for c in cameras:
            writer.write(f'/cameras/{c}/image_raw', rgb8_image_cdr(lab.render(c), t_ns, c), t_ns)
    writer.close()
    return path


def ground_truth_yaw(quat: list[float]) -> float:
    return float(2 * np.arctan2(quat[3], quat[0]))


def errors(report, truth: dict, sheet_objects: dict) -> dict[str, dict]:
    """Per object: position error (m), yaw error (rad, modulo the shape's symmetry), colour
    errors (RGB distance and ΔE76 vs the bench's nominal colour)."""
    out = {}
    for name, rep in report.objects.items():
        gt = truth[name]
        period = yaw_period(sheet_objects[name])
        yaw_err = (abs(wrap_yaw(rep.yaw - ground_truth_yaw(gt['quat']), period))
                   if period else None)
        out[name] = {
            'position_error_m': float(np.linalg.norm(np.array(rep.position[:2])
                                                     - np.array(gt['pos'][:2]))),
            'first_estimate_error_m': float(np.linalg.norm(np.array(rep.first_estimate[:2])
                                                           - np.array(gt['pos'][:2]))),
            'yaw_error_rad': yaw_err, 'iou': rep.iou,
            'colour': rep.colour, 'true_colour': gt['color'],
            'colour_rgb_error': rgb_distance(rep.colour, gt['color']),
            'colour_delta_e': delta_e76(rep.colour, gt['color'])}
    return out


def rendered_layouts(lab: BenchLab, tmp: Path, first_seed: int, seeds: int):
    """Every LAYOUTS entry in both regions on seeds first_seed..: the lab's first frames as
    an episode, its true cameras, its true objects."""
    cams = true_cameras(lab)
    for task, variant in LAYOUTS:
        for region in ('id', 'ood'):
            for seed in range(first_seed, first_seed + seeds):
                lab.reset(task, seed, region, variant)
                ep = write_first_frames(lab, tmp / f'{task}_{variant}_{region}_{seed}')
                yield (task, variant, region, seed), ep, cams, lab.task_state()['objects']


def recorded_layouts(lab: BenchLab, episodes: Path, calibration: Path):
    """Each recorded episode, the calibrated cameras, the lab's objects on its layout."""
    from comsim_bench_lab.scoring import episode_reset, true_layout
    from comsim_core.episodes import find_episodes
    from comsim_twin.alignment.cli import load_cameras

    cams = load_cameras(calibration)
    for ep in find_episodes(episodes):
        task, seed, region, variant = episode_reset(ep)
        yield (task, variant or 'default', region, seed), ep, cams, true_layout(lab, ep)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--seeds', type=int, default=2)
    ap.add_argument('--first-seed', type=int, default=0, help='layout seeds FIRST.. FIRST+seeds-1')
    ap.add_argument('--backend', choices=('projection', 'mujoco'), default='projection')
    ap.add_argument('--foreground', nargs=2, type=float, metavar=('SIGMAS', 'MIN_CHROMA'),
                    help="the segmentation's table-distance thresholds instead of its defaults "
                         '(to measure a change against the old values in one session)')
    ap.add_argument('--episodes', type=Path, help='recorded episodes to align instead')
    ap.add_argument('--calibration', type=Path, help="with --episodes: the twin's cameras")
    add_out_argument(ap, __file__)
    args = ap.parse_args(argv)
    if bool(args.episodes) != bool(args.calibration):
        ap.error('--episodes and --calibration go together')
    if args.foreground:
        import functools

        from comsim_twin.alignment import align, segmentation
        align.foreground = functools.partial(segmentation.foreground, sigmas=args.foreground[0],
                                             min_chroma=args.foreground[1])
    lab = make_lab()
    sheet = load_sheet()
    backend = None
    if args.backend == 'mujoco':
        from comsim_twin.backends import make_backend
        backend = make_backend('mujoco')
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        layouts = (recorded_layouts(lab, args.episodes, args.calibration) if args.episodes
                   else rendered_layouts(lab, Path(tmp), args.first_seed, args.seeds))
        for (task, variant, region, seed), ep, cams, truth in layouts:
            t0 = time.perf_counter()
            try:
                _, report = align_episode(ep, cams, sheet, task, variant, backend)
            except AlignmentError as exc:      # counted: a twin stage would stop here
                rows.append({'task': task, 'variant': variant, 'region': region,
                             'seed': seed, 'error': str(exc)})
                print(f'{task:13s} {variant:12s} {region:3s} seed {seed}: {exc}', flush=True)
                continue
            dt = time.perf_counter() - t0
            errs = errors(report, truth, sheet.objects(task, variant))
            rows.append({'task': task, 'variant': variant, 'region': region,
                         'seed': seed, 'seconds': dt, 'objects': errs,
                         'warnings': report.warnings})
            worst = max(e['position_error_m'] for e in errs.values())
            print(f'{task:13s} {variant:12s} {region:3s} seed {seed}: worst position '
                  f'error {worst * 1000:5.1f} mm, {dt:.2f} s', flush=True)
    if backend is not None:
        backend.close()
    failed = [r for r in rows if 'error' in r]
    rows_ok = [r for r in rows if 'error' not in r]
    objs = [o for r in rows_ok for o in r['objects'].values()]
    pos = np.array([o['position_error_m'] for o in objs])
    yaws = np.array([o['yaw_error_rad'] for o in objs if o['yaw_error_rad'] is not None])
    summary = {
        'objects': len(objs), 'layouts': len(rows), 'layouts_failed': len(failed),
        'position_error_mm': {'mean': 1000 * pos.mean(), 'median': 1000 * np.median(pos),
                              'p95': 1000 * np.quantile(pos, 0.95), 'max': 1000 * pos.max()},
        'under_1cm': float((pos < 0.01).mean()),
        'yaw_error_deg': {'mean': float(np.degrees(yaws.mean())),
                          'max': float(np.degrees(yaws.max()))} if len(yaws) else None,
        'colour_rgb_error': {'mean': float(np.mean([o['colour_rgb_error'] for o in objs])),
                             'max': float(np.max([o['colour_rgb_error'] for o in objs]))},
        'colour_delta_e': {'mean': float(np.mean([o['colour_delta_e'] for o in objs])),
                           'max': float(np.max([o['colour_delta_e'] for o in objs]))},
        'seconds_per_layout': float(np.mean([r['seconds'] for r in rows_ok]))}
    result = {'cameras': (str(args.calibration) if args.episodes else 'bench lab true camera_info'),
              'episodes': str(args.episodes or ''),
              'renderer': args.backend,
              'foreground': args.foreground or 'defaults', 'summary': summary, 'layouts': rows}
    print(json.dumps(summary, indent=2, default=float))
    write_result(args.out, result, machine())
    return 0


if __name__ == '__main__':
    sys.exit(main())
