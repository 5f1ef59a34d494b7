"""The registry's task rules as pure functions: layouts from a seed, checks on object states,
and the bench lab and the twin's generation judging with the very same rules."""
from pathlib import Path

import numpy as np
import pytest

from comsim_bench_lab.config import LabConfig
from comsim_bench_lab.tasks.bench_task import BenchTask
from comsim_core.geometry import tilt_of, yaw_quat
from comsim_core.tasks.layout import LayoutError, Region
from comsim_core.tasks.registry import UnknownTaskError, get_task, task_names
from comsim_core.tasks.shake_bottle import ShakeHistory
from comsim_core.tasks.state import ObjectState
from comsim_core.tasks.task import NoHistory
from comsim_twin.generation.success import SuccessMonitor
from comsim_twin.scene import TwinObject

LAB = Path(__file__).resolve().parents[2] / 'config/bench_lab/lab.yaml'
REGION = Region.of([0.30, 0.50], [-0.16, 0.12])


@pytest.fixture(scope='module')
def lab_cfg():
    return LabConfig.load(LAB)


def _twin_objects(objs) -> dict[str, TwinObject]:
    return {n: TwinObject(n, o.shape, [float(v) for v in o.size], [0.5, 0.5, 0.5],
                          [0.4, 0.0, o.half_height]) for n, o in objs.items()}


def test_registry_knows_the_three_tasks_and_names_them_for_an_unknown_one():
    assert task_names() == ['move_card', 'shake_bottle', 'stack_blocks']
    for name in task_names():
        task = get_task(name)
        assert task.name == name and task.objects and task.program and task.goal
    with pytest.raises(UnknownTaskError, match=r"unknown task 'juggle'; known: \['move_card', "
                                               r"'shake_bottle', 'stack_blocks'\]"):
        get_task('juggle')


def test_geometry():
    for yaw in (-2.0, 0.0, 0.7):
        q = yaw_quat(yaw)
        assert np.linalg.norm(q) == pytest.approx(1.0)
        assert 2 * np.arctan2(q[3], q[0]) == pytest.approx(yaw)
        assert tilt_of(q) == pytest.approx(0.0, abs=1e-7)       # yaw never tilts
    assert np.degrees(tilt_of([np.cos(0.2), np.sin(0.2), 0, 0])) == pytest.approx(22.92, abs=0.01)


def test_layouts_are_seeded_inside_the_region_and_too_small_regions_are_named(lab_cfg):
    for name in task_names():
        task, tcfg = get_task(name), lab_cfg.tasks[name]
        objs = tcfg.objects_for('default')
        a = task.layout(np.random.default_rng(4), REGION, tcfg.params, objs)
        b = task.layout(np.random.default_rng(4), REGION, tcfg.params, objs)
        assert a.target == b.target and set(a.placements) == set(task.objects)
        for n, p in a.placements.items():
            np.testing.assert_array_equal(p.xy, b.placements[n].xy)
            assert REGION.x[0] <= p.xy[0] <= REGION.x[1] and REGION.y[0] <= p.xy[1] <= REGION.y[1]
        with pytest.raises(LayoutError, match='region'):
            task.layout(np.random.default_rng(0), Region.of([0.4, 0.41], [0.0, 0.01]),
                        tcfg.params, objs)


def test_stack_blocks_check_names_what_is_wrong(lab_cfg):
    task = get_task('stack_blocks')
    objs = lab_cfg.tasks['stack_blocks'].objects_for('default')
    hb, ht = objs['block_bottom'].half_height, objs['block_top'].half_height

    def judge(top, bottom=(0.4, 0, hb), lin=(0, 0, 0)):
        states = {'block_top': ObjectState.of(top, lin_vel=lin),
                  'block_bottom': ObjectState.of(bottom)}
        return task.check(states, objs, {}, {}, NoHistory(), 0.0)

    assert judge([0.405, 0, 2 * hb + ht]) == (True, 'top block stacked on the bottom block')
    assert 'off the bottom block centre' in judge([0.44, 0, 2 * hb + ht])[1]
    assert 'stacked would be' in judge([0.4, 0, ht])[1]
    assert judge([0.4, 0, 2 * hb + ht + 0.05], [0.4, 0, hb + 0.05])[1] == \
        'bottom block is not on the table'
    assert judge([0.405, 0, 2 * hb + ht], lin=(0.2, 0, 0))[1] == 'blocks still moving'


def test_move_card_zone_from_the_target_else_the_params():
    task = get_task('move_card')
    objs = {'card': TwinObject('card', 'box', [0.045, 0.03, 0.002], [1, 1, 1], [0, 0, 0])}
    card = {'card': ObjectState.of([0.45, 0.0, 0.002])}
    near = {'zone_center': [0.4, 0.0]}                 # card 5 cm off the zone centre in x
    assert task.check(card, objs, near, {}, NoHistory(), 0.0)[0]      # default half (0.06, 0.05)
    small = {'zone_half_size': [0.03, 0.03]}
    ok, reason = task.check(card, objs, near, small, NoHistory(), 0.0)
    assert not ok and reason.endswith('zone half (0.03, 0.03)')       # the params' zone
    wide = {**near, 'zone_half_size': [0.06, 0.05]}
    assert task.check(card, objs, wide, small, NoHistory(), 0.0)[0]   # the target's zone wins
    assert not task.check(card, objs, {**near, **small}, {}, NoHistory(), 0.0)[0]
    assert task.marker_poses(near) == {'target_zone': (0.4, 0.0, 0.0)}
    [zone] = task.markers({'zone_half_size': [0.05, 0.04]})
    assert zone.half_size == (0.05, 0.04) and zone.size_param == 'zone_half_size'


def test_shake_history_counts_reversals_only_when_lifted_and_fast():
    h = ShakeHistory()

    def tick(z, vy):
        h.update({'bottle': ObjectState.of([0.4, 0, z], lin_vel=[0, vy, 0])}, 0.0)

    tick(0.05, 0.0)                                    # resting height
    for k in range(8):
        tick(0.07, 0.3 if k % 2 else -0.3)             # 2 cm up: below the 3 cm gate
    assert h.oscillations == 0
    for k in range(8):
        tick(0.15, 0.05 if k % 2 else -0.05)           # lifted but slower than 0.08 m/s
    assert h.oscillations == 0 and h.max_lift == pytest.approx(0.1)
    for k in range(5):
        tick(0.15, 0.3 if k % 2 else -0.3)             # 4 reversals
    assert h.oscillations == 2


def test_lab_and_twin_give_the_same_verdicts(lab_cfg):
    """One implementation: the lab's BenchTask and the twin's SuccessMonitor agree, reasons
    included, on final states and on a shake history."""
    rng = np.random.default_rng(0)
    for name in task_names():
        tcfg = lab_cfg.tasks[name]
        objs = tcfg.objects_for('default')
        lab_task = BenchTask(tcfg)
        lab_task.sample(np.random.default_rng(1), tcfg.regions['id'], objs)
        twin = SuccessMonitor(name, _twin_objects(objs), lab_task.target, tcfg.params)
        lab_task.reset_tracking()
        reasons = set()
        for _ in range(60):
            states = {}
            for n, o in objs.items():
                z = o.half_height + rng.choice([0.0, 0.0, 0.002, 0.06, 0.1])
                xy = rng.uniform([0.35, -0.05], [0.45, 0.05])
                if name == 'move_card' and rng.random() < 0.5:
                    xy = np.asarray(lab_task.target['zone_center']) + rng.uniform(-0.07, 0.07, 2)
                states[n] = {'pos': [*xy, z], 'quat': list(yaw_quat(rng.uniform(-1, 1))),
                             'lin_vel': list(rng.choice([0.0, 0.3]) * rng.standard_normal(3)),
                             'ang_vel': [0.0, 0.0, 0.0]}
            if name == 'stack_blocks' and rng.random() < 0.5:
                bot = states['block_bottom']['pos']
                states['block_top']['pos'] = [bot[0] + 0.004, bot[1],
                                              bot[2] + objs['block_bottom'].half_height
                                              + objs['block_top'].half_height]
            plain = {n: ObjectState.from_dict(s) for n, s in states.items()}
            lab_task.update(plain, 0.0)
            twin.update(states)
            verdict = lab_task.check_success(plain, objs, 0.0)
            assert twin.check(states) == verdict
            reasons.add(verdict[1])
        assert len(reasons) >= 2, (name, reasons)          # more than one branch was judged
