"""The `workspace` region: the arm's reachable table area, stated by the twin's own config.

Layouts drawn there stay inside the box and the reach, cover more than the `wide` region, and
the scripted programs succeed in the twin at the workspace's extreme corners (the IK and the
approach behind an object hold there)."""
import copy
import os

import numpy as np
import pytest

os.environ.setdefault('MUJOCO_GL', 'egl')
from comsim_core.robot.model import RobotModel, tool_down_rotation
from comsim_core.tasks.registry import get_task
from comsim_twin.backends import make_backend
from comsim_twin.generation.cli import parse_args
from comsim_twin.generation.config import GenerationConfig, GenerationConfigError
from comsim_twin.generation.episode import run_episode
from comsim_twin.generation.randomise import RandomiseError, episode_seed, in_region, randomise
from fixtures.twin_scenes import base_scene

TASKS = ('move_card', 'shake_bottle', 'stack_blocks')
CORNER = 0.16        # m, side of the box cut from each corner of the workspace for the sim check


@pytest.fixture(scope='module')
def cfg():
    return GenerationConfig.load().with_overrides(region='workspace')


def _corners(ws: dict) -> dict[str, dict]:
    """Boxes of side CORNER in the workspace's extreme places: near left/right, far left/right
    (where the box meets the reach) and straight ahead at the far edge."""
    (x0, x1), (y0, y1), reach = ws['x'], ws['y'], ws['reach']
    far_l = min(x1, float(np.sqrt(reach ** 2 - y1 ** 2)))
    far_r = min(x1, float(np.sqrt(reach ** 2 - y0 ** 2)))
    return {'near_left': {'x': [x0, x0 + CORNER], 'y': [y1 - CORNER, y1]},
            'near_right': {'x': [x0, x0 + CORNER], 'y': [y0, y0 + CORNER]},
            'far_left': {'x': [far_l - CORNER, far_l], 'y': [y1 - CORNER, y1], 'reach': reach},
            'far_right': {'x': [far_r - CORNER, far_r], 'y': [y0, y0 + CORNER], 'reach': reach},
            'far': {'x': [x1 - CORNER, x1], 'y': [-CORNER / 2, CORNER / 2], 'reach': reach}}


def test_every_task_has_a_workspace_within_the_arms_reach(cfg):
    """The configured box cut to its reach is reachable by the twin's arm, tool down, at push
    height and 0.12 m above, at its extreme points (a shrunk reach would not need this test;
    a grown one fails it)."""
    robot = RobotModel.load(None)
    for task in TASKS:
        ws = cfg.task(task)['regions']['workspace']
        wide = cfg.task(task)['regions']['wide']
        assert ws['x'][0] <= wide['x'][0] and ws['y'][0] <= wide['y'][0] and \
            ws['y'][1] > wide['y'][1], (task, ws, wide)
        points = [(c['x'][i], c['y'][j]) for c in _corners(ws).values()
                  for i in (0, 1) for j in (0, 1) if in_region((c['x'][i], c['y'][j]), ws)]
        for x, y in points:
            for z in (0.017, 0.137):
                yaw = float(np.arctan2(y, x))
                res = robot.ik(np.array([x, y, z]), tool_down_rotation(yaw), raise_on_fail=False)
                assert res.success, (task, x, y, z, res.pos_err)


@pytest.mark.parametrize('task', TASKS)
def test_layouts_fall_inside_the_workspace_and_cover_it(cfg, task):
    base, reg = base_scene(task), cfg.task(task)['regions']['workspace']
    xy = []
    for i in range(60):
        r = randomise(base, task, cfg, episode_seed(7, task, i))
        assert r.params['region'] == 'workspace' and r.params['region_bounds'] == reg
        for name in get_task(task).objects:
            p = r.scene.objects[name].pos[:2]
            assert in_region(p, reg), (name, p, reg)
            xy.append(p)
        if 'zone_center' in r.target:
            assert in_region(r.target['zone_center'], reg)
    xy = np.array(xy)
    assert np.hypot(xy[:, 0], xy[:, 1]).max() <= reg['reach'] + 1e-9
    wide = cfg.task(task)['regions']['wide']
    assert (xy[:, 1] > wide['y'][1]).any() and (xy[:, 1] < wide['y'][0]).any()   # beyond wide


@pytest.mark.parametrize('corner', ['near_left', 'near_right', 'far_left', 'far_right', 'far'])
def test_move_card_program_succeeds_at_the_workspace_corners(cfg, corner):
    """One push per corner in the twin (no cameras): the built-in program reaches the card and
    slides it into the zone there."""
    task = 'move_card'
    tasks = copy.deepcopy(cfg.tasks)
    box = _corners(tasks[task]['regions']['workspace'])[corner]
    tasks[task]['regions']['workspace'] = box
    local = cfg.with_overrides(tasks=tasks)
    backend = make_backend(local.backend)
    try:
        seed = episode_seed(21, task, 0)
        rnd = randomise(base_scene(task), task, local, seed)
        assert in_region(rnd.params['objects']['card']['pos'][:2], box)
        out = run_episode(backend, rnd, None, seed, local)
    finally:
        backend.close()
    assert out.success, (corner, box, out.reason)


def test_bad_workspace_config_and_cli(cfg):
    data = cfg.to_dict()

    def with_workspace(ws):
        tasks = copy.deepcopy(data['tasks'])
        tasks['move_card']['regions']['workspace'] = ws
        return {**data, 'tasks': tasks}

    for ws, message in (({'x': [0.5, 0.2], 'y': [0, 1]}, 'lo < hi'),
                        ({'x': [0.2, 0.5], 'y': [0, 1], 'reach': -1}, 'reach must be > 0'),
                        ({'x': [0.2, 0.5], 'y': [0, 1], 'radius': 1}, "unknown keys"),
                        ({'x': [0.2], 'y': [0, 1]}, r'needs x: \[lo, hi\]')):
        with pytest.raises(GenerationConfigError, match=r'tasks\.move_card\.regions\.workspace'):
            GenerationConfig.from_dict(with_workspace(ws))
        with pytest.raises(GenerationConfigError, match=message):
            GenerationConfig.from_dict(with_workspace(ws))
    tasks = copy.deepcopy(data['tasks'])
    del tasks['move_card']['regions']['workspace']
    GenerationConfig.from_dict({**data, 'tasks': tasks, 'region': 'id'})  # only where it is used
    with pytest.raises(GenerationConfigError, match='regions.workspace needs'):
        GenerationConfig.from_dict({**data, 'tasks': tasks, 'region': 'workspace'})
    no_ws = GenerationConfig.from_dict({**data, 'tasks': tasks, 'region': 'id'})
    with pytest.raises(RandomiseError, match="no 'workspace' region"):
        randomise(base_scene('move_card'), 'move_card', no_ws, 0, 'workspace')
    assert parse_args(['--scene', 's', '--task', 't', '--episodes', '1', '--out', 'o',
                       '--region', 'workspace']).region == 'workspace'


def test_an_unreachable_layout_is_a_discarded_failure_not_a_dead_run(cfg, tmp_path):
    """Beyond the arm's reach the program's IK fails: generate() records a failed, discarded
    episode (even with failures: label, there is no complete recording) and goes on."""
    from comsim_twin.generation.runner import DISCARDED_DIR, generate
    task = 'move_card'
    tasks = copy.deepcopy(cfg.tasks)
    tasks[task]['regions']['workspace'] = {'x': [0.60, 0.72], 'y': [-0.16, -0.04]}
    far = cfg.with_overrides(tasks=tasks, failures='label', image_scale=0.25, camera_hz=5.0)
    rep = generate(base_scene(task), task, 1, tmp_path, seed=21, workers=1, config=far,
                   progress=False)
    (rec,) = rep.episodes
    assert not rec.success and not rec.kept and rec.reason.startswith('program unreachable')
    assert rep.discarded == 1 and not (tmp_path / rec.name).exists()
    assert (tmp_path / DISCARDED_DIR / rec.name / 'episode.yaml').exists()
