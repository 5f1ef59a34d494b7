"""comsim-align: the twin scene from an episode's first frames.

    python -m comsim_twin.alignment.cli EPISODE --calibration DIR --task T [--variant V]
        [--sheet config/twin/objects.yaml] [--renderer projection|mujoco] --out twin_scene.yaml

--calibration DIR holds the calibrated cameras: a twin scene YAML (its `cameras:` section), one
flat YAML per camera (width, height, K, D, T_base_camera, optional topic; name = file stem) or
the camera_calibration YAML that comsim-calibrate writes (camera_matrix, ...; name = file stem).
Writes the twin scene and, beside it, the alignment report (`<out stem>_alignment.yaml`).
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import fields
from pathlib import Path

import numpy as np
import yaml

from comsim_core.config import load_config
from comsim_core.errors import cli_main, load_yaml
from comsim_twin.alignment.align import align_episode
from comsim_twin.alignment.errors import AlignmentError
from comsim_twin.alignment.sheet import DEFAULT_SHEET, load_sheet
from comsim_twin.calibration import CalibrationError, load_twin_camera
from comsim_twin.scene import CameraEntry, SceneError, TwinCamera, TwinScene, _plain

# a mapping with any of these keys is a flat per-camera file, read strictly as a CameraEntry
CAMERA_KEYS = frozenset(f.name for f in fields(CameraEntry))


def load_cameras(directory: str | Path) -> dict[str, TwinCamera]:
    """Calibrated TwinCameras from a directory of YAML files (see module docs)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise AlignmentError(f'calibration directory {directory} not found')
    cams: dict[str, TwinCamera] = {}
    for path in sorted(directory.glob('*.y*ml')):
        data = load_yaml(path, 'calibration file')
        if not isinstance(data, dict):
            continue
        try:
            if 'cameras' in data and 'format' in data:
                cams.update(TwinScene.from_dict(data, str(path)).cameras)
            elif 'camera_matrix' in data:
                cams[path.stem] = load_twin_camera(path)
            elif CAMERA_KEYS & set(data):
                entry = load_config(data, CameraEntry, name=str(path), error=SceneError)
                cams[path.stem] = entry.camera(path.stem)
        except (SceneError, CalibrationError) as exc:
            raise AlignmentError(str(exc)) from exc
    if not cams:
        raise AlignmentError(f'{directory}: no calibrated cameras (a twin scene YAML with '
                             f'cameras, or per-camera YAML with K, D, T_base_camera)')
    return cams


@cli_main('comsim-align')
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description='Twin scene from an episode\'s first frames.')
    ap.add_argument('episode', type=Path)
    ap.add_argument('--calibration', type=Path, required=True)
    ap.add_argument('--task', required=True)
    ap.add_argument('--variant', default=None)
    ap.add_argument('--sheet', type=Path, default=DEFAULT_SHEET)
    ap.add_argument('--renderer', choices=('projection', 'mujoco'), default='projection',
                    help='render-and-compare silhouettes: analytic projection or the MuJoCo twin')
    ap.add_argument('--out', type=Path, default=Path('twin_scene.yaml'))
    args = ap.parse_args(argv)
    backend = None
    try:
        cams = load_cameras(args.calibration)
        sheet = load_sheet(args.sheet)
        if args.renderer == 'mujoco':
            from comsim_twin.backends import make_backend
            backend = make_backend('mujoco')
        scene, report = align_episode(args.episode, cams, sheet, args.task, args.variant,
                                      backend)
    finally:
        if backend is not None:
            backend.close()
    scene.save(args.out)
    rep_path = args.out.with_name(f'{args.out.stem}_alignment.yaml')
    rep_path.write_text(yaml.safe_dump(_plain(report.to_dict()), sort_keys=False))
    for name, o in report.objects.items():
        print(f'{name}: x {o.position[0]:.4f} y {o.position[1]:.4f} yaw {o.yaw:+.3f} rad '
              f'IoU {o.iou:.3f} colour {np.round(o.colour, 3).tolist()}')
    for w in report.warnings:
        print(f'warning: {w}')
    print(f'wrote {args.out} and {rep_path} ({report.seconds:.2f} s, {report.renderer})')
    return 0


if __name__ == '__main__':
    sys.exit(main())
