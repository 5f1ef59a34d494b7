"""Calibrate every camera of a recorded calibration session (rosbag2 episode + episode.yaml).

The sidecar says, per camera, which image (by header stamp) is a hand-held view and which
shows the board at which table placement; placement poses come from the lab's calibration
setup. Writes ``<out>/<camera>.yaml`` (camera_calibration YAML + T_base_camera) and
``<out>/calibration_report.json``.
"""
from __future__ import annotations

import json
from pathlib import Path

from comsim_core.config import load_config
from comsim_core.episodes import Episode
from comsim_core.paths import resolve_config_path

from .board import ChessBoard
from .errors import CalibrationError
from .extrinsics import calibrate_extrinsics
from .intrinsics import MIN_VIEWS, calibrate_intrinsics
from .io import write_camera_yaml
from .setup import DEFAULT_SETUP, load_calibration_setup

REPORT_NAME = 'calibration_report.json'


def calibrate_from_bag(bag_path: str | Path, out_dir: str | Path,
                       setup_path: str | Path | None = None,
                       min_views: int = MIN_VIEWS) -> dict[str, dict]:
    """camera name -> report (intrinsics, extrinsics, output file)."""
    setup = load_calibration_setup(resolve_config_path(setup_path or DEFAULT_SETUP))
    out = Path(out_dir)
    reports: dict[str, dict] = {}
    with Episode.open(bag_path) as ep:
        meta = ep.metadata
        where = f'{ep.path}/episode.yaml'
        cams = meta.get('cameras')
        if not isinstance(cams, dict) or not cams:
            raise CalibrationError(f'{where}: missing key cameras (not a calibration session?)')
        board = (load_config(meta['board'], ChessBoard, name=where, where='board',
                             error=CalibrationError) if 'board' in meta else setup.board)
        if board != setup.board:
            raise CalibrationError(f'{where}: board {board.to_dict()} differs from the setup '
                                   f'{setup.source} board {setup.board.to_dict()}')
        for cam, info in cams.items():
            topic = info.get('topic', f'/cameras/{cam}/image_raw')
            views = {int(v['stamp_ns']): v for v in info.get('views') or []}
            intr, extr = [], []
            for stamp, image in ep.images(topic):
                view = views.get(stamp)
                if view is None:
                    continue
                if view.get('kind') == 'intrinsics':
                    intr.append(image)
                elif view.get('kind') == 'extrinsics':
                    extr.append((view['placement'], image, setup.placement(view['placement'])))
            if not intr:
                raise CalibrationError(f'{where}: camera {cam}: no intrinsics views on {topic}')
            K_res = calibrate_intrinsics(intr, board, min_views=min_views, camera=cam)
            if not extr:
                raise CalibrationError(f'{where}: camera {cam}: no table (extrinsics) views')
            E_res = calibrate_extrinsics(extr, K_res.K, K_res.D, board, camera=cam)
            h, w = intr[0].shape[:2]
            path = write_camera_yaml(out / f'{cam}.yaml', cam, w, h, K_res.K, K_res.D,
                                     E_res.T_base_camera)
            reports[cam] = {'topic': topic, 'file': str(path), 'width': w, 'height': h,
                            'intrinsics': K_res.summary(), 'extrinsics': E_res.summary()}
    out.mkdir(parents=True, exist_ok=True)
    (out / REPORT_NAME).write_text(json.dumps(reports, indent=1))
    return reports
