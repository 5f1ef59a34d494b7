"""A small bright sphere must land where cv2.projectPoints says: pinhole (plain) and distorted."""
import copy
import os
from pathlib import Path

import cv2
import numpy as np
import pytest
import yaml

os.environ.setdefault('MUJOCO_GL', 'egl')

import mujoco  # noqa: E402

from comsim_bench_lab.config import LabConfig  # noqa: E402
from comsim_bench_lab.lab import BenchLab  # noqa: E402
from comsim_bench_lab.realism import RealismProfile  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
POINTS = [np.array([0.30, -0.10, 0.12]), np.array([0.50, 0.15, 0.05]), np.array([0.20, 0.25, 0.2]),
          np.array([0.45, -0.25, 0.02])]


@pytest.fixture(scope='module')
def lab():
    raw = yaml.safe_load((ROOT / 'config/bench_lab/lab.yaml').read_text())
    data = copy.deepcopy(raw)
    objs = data['tasks']['stack_blocks']['objects']
    objs['block_top'] = {'shape': 'sphere', 'size': [0.006], 'color': [1, 1, 1], 'mass': 0.01}
    data['tasks']['stack_blocks']['variants'] = {'default': {}}
    cfg = LabConfig.from_dict(data, str(ROOT / 'config/bench_lab/lab.yaml'))
    realism = RealismProfile(shadows=False, noise_std=0.0, blur_sigma=0.0, vignetting=0.0,
                             exposure=1.0, white_balance=np.ones(3), extra_lights=[],
                             distortion=True)
    lab = BenchLab(cfg, realism=realism)
    lab.reset('stack_blocks', 0)
    yield lab
    lab.close()


def _place(lab, pos):
    adr = lab.model.jnt_qposadr[lab.model.joint('block_top_free').id]
    lab.data.qpos[adr:adr + 3] = pos
    mujoco.mj_forward(lab.model, lab.data)


def _centroid(a, b):
    diff = np.abs(a.astype(int) - b.astype(int)).sum(axis=2)
    mask = diff > 40
    assert mask.sum() >= 3, 'sphere not visible'
    ys, xs = np.nonzero(mask)
    w = np.ones(len(xs))   # binary mask: shading would bias a brightness-weighted centroid
    return np.array([np.sum(xs * w) / w.sum(), np.sum(ys * w) / w.sum()])


def _project(info, point, with_distortion):
    T_cb = np.linalg.inv(info.T_base_camera)
    rvec, _ = cv2.Rodrigues(T_cb[:3, :3])
    D = info.D if with_distortion else np.zeros(5)
    uv, _ = cv2.projectPoints(point.reshape(1, 1, 3), rvec, T_cb[:3, 3], info.K, D)
    return uv.reshape(2)


@pytest.mark.parametrize('camera', ['front', 'side'])
def test_projection_matches_opencv(lab, camera):
    info = lab.camera_info(camera)
    hidden = np.array([0.0, 0.0, -2.0])   # under the table, out of view
    _place(lab, hidden)
    bg_plain, bg_real = lab.render_plain(camera), lab.render(camera)
    checked = 0
    for p in POINTS:
        ideal = _project(info, p, False)
        distorted = _project(info, p, True)
        if not (10 < distorted[0] < info.width - 10 and 10 < distorted[1] < info.height - 10):
            continue
        _place(lab, p)
        got_plain = _centroid(lab.render_plain(camera), bg_plain)
        got_real = _centroid(lab.render(camera), bg_real)
        assert np.linalg.norm(got_plain - ideal) < 1.0, (camera, p, got_plain, ideal)
        assert np.linalg.norm(got_real - distorted) < 1.0, (camera, p, got_real, distorted)
        checked += 1
    assert checked >= 2
