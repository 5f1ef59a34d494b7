"""Calibration accuracy on the bench lab: capture a calibration session with the
realism profile, calibrate it with comsim_twin.calibration, compare with the lab's true cameras.

Per camera: mean / RMS reprojection error, K error, distortion error (pixel displacement between
the true and the estimated lens over the image), extrinsic error (mm, degrees). Targets: mean
reprojection < 0.5 px, extrinsics < 5 mm and < 0.5 deg.

    .venv/bin/python bench/calibration_accuracy.py [--views 30] [--seed 0] [--out out.json]
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np
from provenance import add_out_argument, machine, write_result

from comsim_bench_lab.calibration_rig import capture_calibration
from comsim_bench_lab.config import LabConfig
from comsim_bench_lab.lab import BenchLab
from comsim_core.geometry import pose_difference
from comsim_twin.calibration import calibrate_from_bag, load_twin_camera

ROOT = Path(__file__).resolve().parents[1]
LAB = ROOT / 'config' / 'bench_lab' / 'lab.yaml'
REALISM = ROOT / 'config' / 'bench_lab' / 'realism.yaml'
TARGETS = {'mean_reprojection_px': 0.5, 'extrinsic_mm': 5.0, 'extrinsic_deg': 0.5}


def distortion_error_px(K_true, D_true, K_est, D_est, width: int, height: int) -> float:
    """Max pixel distance between where the true and the estimated camera put the same ray,
    over a grid of the image (compares K and D together, as they act)."""
    us, vs = np.meshgrid(np.linspace(0, width - 1, 33), np.linspace(0, height - 1, 25))
    pix = np.stack([us.ravel(), vs.ravel()], 1).reshape(-1, 1, 2).astype(np.float64)
    rays = cv2.undistortPoints(pix, K_true, D_true).reshape(-1, 2)
    pts = np.hstack([rays, np.ones((len(rays), 1))])
    proj, _ = cv2.projectPoints(pts, np.zeros(3), np.zeros(3), K_est, D_est)
    return float(np.linalg.norm(proj.reshape(-1, 2) - pix.reshape(-1, 2), axis=1).max())


def compare(lab: BenchLab, cam: str, yaml_path: Path, report: dict) -> dict:
    truth = lab.camera_info(cam)
    est = load_twin_camera(yaml_path)
    dt, da = pose_difference(truth.T_base_camera, est.T_base_camera)
    intr = report['intrinsics']
    return {
        'mean_reprojection_px': intr['mean_error_px'], 'rms_reprojection_px': intr['rms_px'],
        'views_used': len(intr['used_views']), 'views_rejected': len(intr['rejected_views']),
        'fx_err_px': float(est.K[0, 0] - truth.K[0, 0]),
        'fy_err_px': float(est.K[1, 1] - truth.K[1, 1]),
        'cx_err_px': float(est.K[0, 2] - truth.K[0, 2]),
        'cy_err_px': float(est.K[1, 2] - truth.K[1, 2]),
        'lens_max_err_px': distortion_error_px(truth.K, truth.D, est.K, est.D, truth.width,
                                               truth.height),
        'D_true': truth.D.tolist(), 'D_est': est.D.tolist(),
        'extrinsic_mm': dt * 1000.0, 'extrinsic_deg': da,
        'extrinsic_rms_px': report['extrinsics']['rms_px'],
        'placements_used': len(report['extrinsics']['residuals'])}


def run(views: int, seed: int, work: Path) -> dict:
    t0 = time.perf_counter()
    episode = capture_calibration(LAB, REALISM, work / 'session', views, seed)
    t1 = time.perf_counter()
    reports = calibrate_from_bag(episode, work / 'calib')
    t2 = time.perf_counter()
    lab = BenchLab(LabConfig.load(LAB))
    try:
        cams = {cam: compare(lab, cam, Path(r['file']), r) for cam, r in reports.items()}
    finally:
        lab.close()
    for c in cams.values():
        c['meets_targets'] = bool(c['mean_reprojection_px'] < TARGETS['mean_reprojection_px']
                                  and c['extrinsic_mm'] < TARGETS['extrinsic_mm']
                                  and c['extrinsic_deg'] < TARGETS['extrinsic_deg'])
    return {'views_per_camera': views, 'seed': seed, 'capture_s': t1 - t0,
            'calibrate_s': t2 - t1, 'targets': TARGETS, 'cameras': cams}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--views', type=int, default=30, help='hand-held views per camera')
    ap.add_argument('--seed', type=int, default=0)
    add_out_argument(ap, __file__)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix='comsim_calib_') as tmp:
        result = run(args.views, args.seed, Path(tmp))
    print(f'calibration accuracy, {args.views} hand-held views per camera, seed {args.seed} '
          f'(capture {result["capture_s"]:.1f} s, calibrate {result["calibrate_s"]:.1f} s)')
    print(f'{"camera":8} {"mean px":>8} {"rms px":>7} {"used":>5} {"rej":>4} {"fx err":>7} '
          f'{"cx err":>7} {"lens px":>8} {"ext mm":>7} {"ext deg":>8}  ok')
    for cam, c in result['cameras'].items():
        print(f'{cam:8} {c["mean_reprojection_px"]:8.3f} {c["rms_reprojection_px"]:7.3f} '
              f'{c["views_used"]:5d} {c["views_rejected"]:4d} {c["fx_err_px"]:7.2f} '
              f'{c["cx_err_px"]:7.2f} {c["lens_max_err_px"]:8.2f} {c["extrinsic_mm"]:7.2f} '
              f'{c["extrinsic_deg"]:8.3f}  {c["meets_targets"]}')
    write_result(args.out, result, machine())
    return 0 if all(c['meets_targets'] for c in result['cameras'].values()) else 1


if __name__ == '__main__':
    raise SystemExit(main())
