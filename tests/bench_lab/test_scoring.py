"""Scoring the twin against the bench lab's truth: intrinsic and pose errors, object position
and yaw errors (box yaw modulo 90 degrees, none for round objects, objects the layout lacks are
not scored), and a lab reset from the episode's sidecar reproduces the recorded layout."""
import os
from pathlib import Path

import numpy as np
import pytest
import yaml

from comsim_core.geometry import pose_difference

os.environ.setdefault('MUJOCO_GL', 'egl')

from comsim_bench_lab.config import LabConfig  # noqa: E402
from comsim_bench_lab.lab import BenchLab  # noqa: E402
from comsim_bench_lab.scoring import (  # noqa: E402
    camera_score,
    episode_reset,
    object_scores,
    score_twin,
    yaw_deg,
)

ROOT = Path(__file__).resolve().parents[2]
LAB_YAML = ROOT / 'config/bench_lab/lab.yaml'


def rot_z(deg: float) -> np.ndarray:
    a = np.radians(deg)
    T = np.eye(4)
    T[:2, :2] = [[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]]
    return T


def quat_z(deg: float) -> list[float]:
    a = np.radians(deg) / 2
    return [float(np.cos(a)), 0.0, 0.0, float(np.sin(a))]


def test_camera_score_is_estimate_minus_truth():
    K = np.array([[300.0, 0, 160], [0, 301.0, 120], [0, 0, 1]])
    T = np.eye(4)
    T[:3, 3] = [0.5, -0.2, 0.6]
    est_T = T @ rot_z(0.3)
    est_T[:3, 3] += [0.003, 0.004, 0.0]
    est_K = K + np.array([[1.5, 0, -0.25], [0, -2.0, 0.5], [0, 0, 0]])
    s = camera_score('front', K, T, est_K, est_T)
    assert (s.fx_px, s.fy_px, s.cx_px, s.cy_px) == pytest.approx((1.5, -2.0, -0.25, 0.5))
    assert s.position_mm == pytest.approx(5.0)
    assert s.rotation_deg == pytest.approx(0.3, abs=1e-6)
    assert pose_difference(T, T) == pytest.approx((0.0, 0.0), abs=1e-6)


def test_object_scores_position_yaw_modulo_90_round_and_unknown():
    truth = {'box': {'pos': [0.40, 0.10, 0.80], 'quat': quat_z(30.0), 'shape': 'box'},
             'bottle': {'pos': [0.30, -0.10, 0.80], 'quat': quat_z(10.0), 'shape': 'bottle'}}
    aligned = {'box': {'position': [0.403, 0.104, 0.9], 'yaw': np.radians(30.0 + 92.0)},
               'bottle': {'position': [0.30, -0.11, 0.8], 'yaw': 1.0},
               'ghost': {'position': [0.0, 0.0, 0.0], 'yaw': 0.0}}
    box, bottle, ghost = object_scores('ep', aligned, truth)
    assert box.in_layout and box.position_mm == pytest.approx(5.0)     # z is not scored
    assert box.yaw_deg == pytest.approx(2.0)                           # 92 deg = 2 deg for a box
    assert bottle.position_mm == pytest.approx(10.0) and bottle.yaw_deg is None
    assert not ghost.in_layout and ghost.position_mm is None
    assert yaw_deg(quat_z(-75.0)) == pytest.approx(-75.0)


def _episode(root: Path, name: str, task: str, seed: int | None) -> Path:
    d = root / name
    d.mkdir(parents=True)
    side = {'metadata': {'task': task, 'seed': seed, 'region': 'id', 'variant': ''}}
    (d / 'episode.yaml').write_text(yaml.safe_dump(side))
    return d


def test_score_twin_against_the_lab(tmp_path):
    config = LabConfig.load(LAB_YAML)
    lab = BenchLab(config, None)
    try:
        lab.reset('stack_blocks', 3)
        layout = lab.task_state()['objects']
        truth_cam = lab.camera_info('front')
    finally:
        lab.close()
    ep = _episode(tmp_path, 'episode_0000_stack_blocks', 'stack_blocks', 3)
    other = _episode(tmp_path, 'episode_0001_stack_blocks', 'stack_blocks', 4)
    assert episode_reset(ep) == ('stack_blocks', 3, 'id', None)
    unseeded = _episode(tmp_path, 'old', 'stack_blocks', None)
    with pytest.raises(ValueError, match='records no task or seed'):
        episode_reset(unseeded)
    shifted = {name: {'position': [o['pos'][0] + 0.003, o['pos'][1] - 0.004, o['pos'][2]],
                      'yaw': np.radians(yaw_deg(o['quat']))} for name, o in layout.items()}
    T = np.asarray(truth_cam.T_base_camera) @ rot_z(0.5)
    K = np.asarray(truth_cam.K) + np.diag([2.0, 0.0, 0.0])
    scores = score_twin(config, {'front': (K, T)},
                        {ep.name: (ep, shifted), other.name: (other, shifted)})
    (cam,) = scores.cameras
    assert cam.fx_px == pytest.approx(2.0) and cam.fy_px == pytest.approx(0.0)
    assert cam.position_mm == pytest.approx(0.0, abs=1e-6)
    assert cam.rotation_deg == pytest.approx(0.5, abs=1e-6)
    same = [o for o in scores.objects if o.episode == ep.name]
    assert len(same) == len(layout) >= 2
    assert all(o.position_mm == pytest.approx(5.0) for o in same)
    assert all(o.yaw_deg == pytest.approx(0.0, abs=1e-6) for o in same if o.yaw_deg is not None)
    # seed 4 lays the blocks out elsewhere: the same estimate is far off there
    far = [o.position_mm for o in scores.objects if o.episode == other.name]
    assert max(far) > 10.0
    assert len(scores.position_errors_mm()) == 2 * len(layout)
