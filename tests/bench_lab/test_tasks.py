"""The lab's tasks (BenchTask: the registry's rules bound to lab.yaml), driven with plain object
states (no physics)."""
from pathlib import Path

import numpy as np
import pytest

from comsim_bench_lab.config import LabConfig, LabConfigError
from comsim_bench_lab.tasks.bench_task import BenchTask
from comsim_core.tasks.state import ObjectState

LAB = Path(__file__).resolve().parents[2] / 'config/bench_lab/lab.yaml'


class FakeStates(dict):
    def set(self, name, pos, quat=(1, 0, 0, 0), lin=(0, 0, 0)):
        self[name] = ObjectState.of(pos, quat, lin)


@pytest.fixture(scope='module')
def cfg():
    return LabConfig.load(LAB)


def test_stack_blocks_check(cfg):
    task = BenchTask(cfg.tasks['stack_blocks'])
    objs = cfg.tasks['stack_blocks'].objects_for('default')
    task.sample(np.random.default_rng(0), cfg.tasks['stack_blocks'].regions['id'], objs)
    view = FakeStates()
    hb, ht = objs['block_bottom'].half_height, objs['block_top'].half_height
    view.set('block_bottom', [0.4, 0, hb])
    view.set('block_top', [0.405, 0, 2 * hb + ht])
    assert task.check_success(view, objs, 0.0)[0]
    view.set('block_top', [0.44, 0, 2 * hb + ht])
    assert not task.check_success(view, objs, 0.0)[0]
    view.set('block_top', [0.5, 0, ht])
    assert not task.check_success(view, objs, 0.0)[0]
    view.set('block_top', [0.405, 0, 2 * hb + ht], lin=(0.2, 0, 0))
    assert 'moving' in task.check_success(view, objs, 0.0)[1]


def test_layouts_are_seeded_and_inside_region(cfg):
    tcfg = cfg.tasks['stack_blocks']
    objs = tcfg.objects_for('default')
    task = BenchTask(tcfg)
    for region in ('id', 'ood'):
        reg = tcfg.regions[region]
        a = task.sample(np.random.default_rng(5), reg, objs)
        b = task.sample(np.random.default_rng(5), reg, objs)
        c = task.sample(np.random.default_rng(6), reg, objs)
        for name in a:
            np.testing.assert_array_equal(a[name].xy, b[name].xy)
            assert reg.x[0] <= a[name].xy[0] <= reg.x[1] and reg.y[0] <= a[name].xy[1] <= reg.y[1]
        assert not np.allclose(a['block_top'].xy, c['block_top'].xy)


def test_move_card_zone(cfg):
    tcfg = cfg.tasks['move_card']
    objs = tcfg.objects_for('default')
    task = BenchTask(tcfg)
    task.sample(np.random.default_rng(0), tcfg.regions['id'], objs)
    c = task.target['zone_center']
    assert task.marker_poses() == {'target_zone': (c[0], c[1], 0.0)}
    [zone] = task.markers()
    assert zone.name == 'target_zone' and zone.half_size == (0.06, 0.05)
    view = FakeStates()
    view.set('card', [c[0] + 0.01, c[1] - 0.01, 0.0025])
    assert task.check_success(view, objs, 0.0)[0]
    view.set('card', [c[0] + 0.1, c[1], 0.0025])
    assert not task.check_success(view, objs, 0.0)[0]


def test_shake_bottle_tracks_lift_and_oscillations(cfg):
    tcfg = cfg.tasks['shake_bottle']
    objs = tcfg.objects_for('default')
    task = BenchTask(tcfg)
    task.sample(np.random.default_rng(0), tcfg.regions['id'], objs)
    task.reset_tracking()
    h = objs['bottle'].size[1]
    view = FakeStates()
    view.set('bottle', [0.4, 0, h])
    task.update(view, 0.0)
    view.set('bottle', [0.4, 0, h + 0.1])
    task.update(view, 0.0)
    assert task.history.max_lift == pytest.approx(0.1)
    for k in range(7):  # 7 alternating velocity phases -> 6 reversals -> 3 oscillations
        view.set('bottle', [0.4, 0, h + 0.1], lin=(0, 0.3 if k % 2 == 0 else -0.3, 0))
        task.update(view, 0.0)
    assert task.history.oscillations == 3
    view.set('bottle', [0.4, 0, h])
    assert task.check_success(view, objs, 0.0)[0]
    view.set('bottle', [0.4, 0, h], quat=(np.cos(0.2), np.sin(0.2), 0, 0))   # 23 deg tilt
    assert 'tilted' in task.check_success(view, objs, 0.0)[1]
    task.reset_tracking()
    view.set('bottle', [0.4, 0, h])
    task.update(view, 0.0)
    assert not task.check_success(view, objs, 0.0)[0]


def test_a_task_no_module_defines_is_a_config_error(cfg):
    tcfg = cfg.tasks['move_card']
    juggle = type(tcfg)('juggle', tcfg.objects, tcfg.regions, tcfg.variants, tcfg.params)
    with pytest.raises(LabConfigError, match=r"unknown task 'juggle' in the lab config; "
                                             r"implemented: \['move_card'"):
        BenchTask(juggle)
