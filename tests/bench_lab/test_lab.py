"""BenchLab API behaviour: resets, errors, time, control, latency, rendering, task state."""
import json
import os
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault('MUJOCO_GL', 'egl')

from comsim_bench_lab.config import LabConfig  # noqa: E402
from comsim_bench_lab.lab import BenchLab  # noqa: E402
from comsim_bench_lab.realism import RealismProfile  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope='module')
def lab():
    lab = BenchLab(LabConfig.load(ROOT / 'config/bench_lab/lab.yaml'),
                   realism=RealismProfile.load(ROOT / 'config/bench_lab/realism.yaml'))
    yield lab
    lab.close()


def test_api_surface(lab):
    assert lab.joint_names == [f'joint{i}' for i in range(1, 7)] + ['gripper']
    assert lab.camera_names == ['front', 'side']
    assert lab.timestep <= 0.002
    assert set(lab.tasks) >= {'stack_blocks', 'move_card', 'shake_bottle'}
    assert lab.tasks['shake_bottle']['regions'] == ['id', 'ood']


@pytest.mark.parametrize('kwargs, text', [
    (dict(task='nope', seed=0), 'stack_blocks'),
    (dict(task='move_card', seed=0, region='far'), "'ood'"),
    (dict(task='move_card', seed=0, variant='purple'), 'red'),
])
def test_reset_errors_list_allowed(lab, kwargs, text):
    with pytest.raises(ValueError, match=text):
        lab.reset(**kwargs)


def test_reset_home_time_and_state(lab):
    lab.reset('stack_blocks', 3)
    t0 = lab.time
    pos, vel, eff = lab.joint_state()
    np.testing.assert_allclose(pos, lab.robot.home, atol=1e-9)
    assert pos.shape == vel.shape == eff.shape == (7,)
    lab.step(50)
    assert lab.time == pytest.approx(t0 + 50 * lab.timestep)
    lab.reset('stack_blocks', 3, region='ood', variant='large')
    assert lab.time >= t0 + 50 * lab.timestep - 1e-12
    state = lab.task_state()
    json.dumps(state)
    assert state['variant'] == 'large' and state['region'] == 'ood' and not state['success']
    reg = lab.config.tasks['stack_blocks'].regions['ood']
    for obj in state['objects'].values():
        assert reg.x[0] <= obj['pos'][0] <= reg.x[1] and reg.y[0] <= obj['pos'][1] <= reg.y[1]
    assert state['objects']['block_bottom']['size'][0] == pytest.approx(0.03)


def test_same_seed_same_layout(lab):
    lab.reset('move_card', 11)
    a = lab.task_state()
    lab.reset('move_card', 11)
    b = lab.task_state()
    lab.reset('move_card', 12)
    c = lab.task_state()
    assert a['objects'] == b['objects'] and a['target'] == b['target']
    assert a['target'] != c['target']


def test_position_tracking_latency_and_clamp(lab):
    lab.reset('shake_bottle', 0)
    target = lab.robot.home.copy()
    target[0] += 0.3
    target[-1] = 0.01
    lab.command_positions(target)
    latency_steps = int(lab.realism.latency_ms / 1000 / lab.timestep)
    lab.step(max(1, latency_steps - 2))
    assert abs(lab.joint_state()[0][0] - lab.robot.home[0]) < 1e-3   # not applied yet
    lab.step(int(1.0 / lab.timestep))
    np.testing.assert_allclose(lab.joint_state()[0], target, atol=5e-3)
    over = lab.robot.home.copy()
    over[0] = lab.robot.upper[0] + 1.0      # beyond the base yaw limit: must be clamped
    lab.command_positions(over)
    lab.step(int(2.5 / lab.timestep))
    assert lab.joint_state()[0][0] == pytest.approx(lab.robot.upper[0], abs=0.01)
    with pytest.raises(ValueError):
        lab.command_positions(np.zeros(3))


def test_render_realism_differs_from_plain(lab):
    lab.reset('stack_blocks', 0)
    for cam in lab.camera_names:
        info = lab.camera_info(cam)
        real, plain = lab.render(cam), lab.render_plain(cam)
        assert real.shape == plain.shape == (info.height, info.width, 3)
        assert real.dtype == plain.dtype == np.uint8
        assert np.abs(real.astype(int) - plain.astype(int)).mean() > 10
        assert plain.std() > 10
    with pytest.raises(KeyError, match='front'):
        lab.render('top')


def test_camera_info_ground_truth(lab):
    info = lab.camera_info('front')
    cfg = lab.config.cameras['front']
    assert info.distortion_model == 'plumb_bob'
    np.testing.assert_allclose(info.K, cfg.K)
    np.testing.assert_allclose(info.D, cfg.distortion)
    np.testing.assert_allclose(info.T_base_camera[:3, 3], cfg.position)
    # the optical axis points from the camera towards the table
    assert info.T_base_camera[2, 2] < 0
