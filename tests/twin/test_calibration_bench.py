"""Calibration of a bench-lab capture (realism on) against the lab's true cameras.

Uses 10 hand-held views per camera to stay fast; the accuracy targets are the real ones
(mean reprojection < 0.5 px, extrinsics < 5 mm and < 0.5 deg). bench/calibration_accuracy.py
measures the same with 30 views.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from comsim_bench_lab.calibration_rig import capture_calibration, load_setup
from comsim_bench_lab.config import LabConfig, LabConfigError, LabConfigKeyError
from comsim_bench_lab.lab import BenchLab
from comsim_core.episodes import Episode
from comsim_core.geometry import pose_difference
from comsim_twin.calibration import (
    CalibrationError,
    calibrate_from_bag,
    load_calibration_setup,
    load_twin_camera,
)

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / 'config' / 'bench_lab' / 'lab.yaml'
REALISM = ROOT / 'config' / 'bench_lab' / 'realism.yaml'
SETUP = ROOT / 'config' / 'twin' / 'calibration.yaml'
VIEWS = 10


@pytest.fixture(scope='module')
def session(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp('calib') / 'session'
    return capture_calibration(LAB, REALISM, out, VIEWS, seed=7)


def test_capture_is_an_episode_with_a_sidecar(session):
    with Episode.open(session) as ep:
        meta = ep.metadata
        assert meta['kind'] == 'calibration' and meta['board']['squares_x'] == 9
        n_place = len(yaml.safe_load((ROOT / 'config/twin/calibration.yaml').read_text())
                      ['placements'])
        for cam in ('front', 'side'):
            views = meta['cameras'][cam]['views']
            assert [v['kind'] for v in views].count('intrinsics') == VIEWS
            assert [v['kind'] for v in views].count('extrinsics') == n_place
            stamps = [t for t, _ in ep.images(f'/cameras/{cam}/image_raw')]
            assert stamps == [v['stamp_ns'] for v in views]
            _, image = next(ep.images(f'/cameras/{cam}/image_raw'))
            assert image.shape == (240, 320, 3) and image.dtype == np.uint8


def test_bench_capture_meets_accuracy_targets(session, tmp_path):
    reports = calibrate_from_bag(session, tmp_path / 'calib')
    assert set(reports) == {'front', 'side'}
    assert (tmp_path / 'calib' / 'calibration_report.json').exists()
    lab = BenchLab(LabConfig.load(LAB))
    try:
        for cam, report in reports.items():
            truth = lab.camera_info(cam)
            est = load_twin_camera(tmp_path / 'calib' / f'{cam}.yaml', report['topic'])
            assert report['intrinsics']['mean_error_px'] < 0.5
            assert len(report['intrinsics']['used_views']) >= 6
            np.testing.assert_allclose(np.diag(est.K)[:2], np.diag(truth.K)[:2], rtol=0.01)
            assert np.abs(est.K[:2, 2] - truth.K[:2, 2]).max() < 3.0
            dt, da = pose_difference(est.T_base_camera, truth.T_base_camera)
            assert dt < 0.005, f'{cam}: extrinsic error {dt * 1000:.1f} mm'
            assert da < 0.5, f'{cam}: extrinsic error {da:.2f} deg'
    finally:
        lab.close()


def test_session_without_sidecar_views_is_a_clear_error(session, tmp_path):
    copy = tmp_path / 'copy'
    shutil.copytree(session, copy)
    meta = yaml.safe_load((copy / 'episode.yaml').read_text())
    del meta['cameras']
    (copy / 'episode.yaml').write_text(yaml.safe_dump(meta))
    with pytest.raises(CalibrationError, match='missing key cameras'):
        calibrate_from_bag(copy, tmp_path / 'out')


def test_lab_and_twin_read_the_public_setup_alike():
    """Two readers of one file (the lab imports no twin code): the same board, the same poses."""
    board, placements = load_setup(SETUP)
    twin = load_calibration_setup(SETUP)
    assert (board.name, board.squares_x, board.squares_y, board.square_size, board.thickness,
            board.margin) == tuple(twin.board.to_dict()[k] for k in (
                'name', 'squares_x', 'squares_y', 'square_size', 'thickness', 'margin'))
    assert [p.name for p in placements] == list(twin.placements)
    for p in placements:
        np.testing.assert_allclose(p.T_base_board, twin.placements[p.name], atol=1e-15)


def test_lab_refuses_a_bad_setup_naming_the_key(tmp_path):
    bad = tmp_path / 'cal.yaml'
    bad.write_text('board: {squares_x: 9, squares_y: 6}\n')
    with pytest.raises(LabConfigKeyError, match=r"cal.yaml: board: missing key 'square_size'"):
        load_setup(bad)
    bad.write_text('board: {squares_x: 9, squares_y: 6, square_size: 0.04}\n'
                   'placements: [{name: a, xy: [0.2, 0.1], yaw: fast}]\n')
    with pytest.raises(LabConfigError, match=r"placements\[0\].yaw: expected a number"):
        load_setup(bad)
