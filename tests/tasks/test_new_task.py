"""A fourth task is one module (lift_block.py) plus config: registered, it runs through the
twin's generation (episodes written, judged by its own check) and through the bench lab's
closed-loop evaluation (its scripted expert, judged by the same check)."""
import dataclasses
import os
from pathlib import Path

import numpy as np
import pytest
import yaml

os.environ.setdefault('MUJOCO_GL', 'egl')

from lift_block import BLOCK, TASK

from comsim_bench_lab.config import LabConfig
from comsim_bench_lab.lab import BenchLab
from comsim_bench_lab.rollout import run_expert_episode
from comsim_core.episodes.reader import Episode
from comsim_core.tasks.registry import UnknownTaskError, get_task, registered
from comsim_twin.generation.config import GenerationConfig
from comsim_twin.generation.runner import generate
from fixtures.twin_scenes import base_scene

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / 'config/bench_lab/lab.yaml'
REGIONS = {'x': [0.32, 0.48], 'y': [-0.12, 0.08]}

# the config a new task needs: the lab's section and the generation's section
LAB_SECTION = {
    'objects': {BLOCK: {'shape': 'box', 'size': [0.0225, 0.0225, 0.0225],
                        'color': [0.85, 0.15, 0.12], 'mass': 0.06, 'friction': 1.0}},
    'regions': {'id': REGIONS, 'ood': {'x': [0.24, 0.40], 'y': [0.18, 0.32]}},
    'params': {'min_lift': 0.05}, 'variants': {'default': {}}}
GENERATION_SECTION = {'regions': {'id': REGIONS, 'wide': REGIONS}, 'yaw': [-0.785, 0.785],
                      'min_lift': 0.05}


@pytest.fixture
def lift_block():
    with registered(TASK) as task:
        yield task


def test_registered_only_inside_the_block():
    with registered(TASK):
        assert get_task('lift_block') is TASK
        with pytest.raises(ValueError, match='already registered'):
            with registered(TASK):
                pass
    with pytest.raises(UnknownTaskError, match="unknown task 'lift_block'"):
        get_task('lift_block')


def test_generation_writes_episodes_judged_by_the_task(lift_block, tmp_path):
    base = base_scene('stack_blocks')
    base.objects = {BLOCK: dataclasses.replace(base.objects['block_top'], name=BLOCK)}
    base.task = 'lift_block'
    cfg = GenerationConfig.load()
    cfg = GenerationConfig.from_dict({**cfg.to_dict(), 'tasks': {'lift_block': GENERATION_SECTION},
                                      'image_scale': 0.25}, 'test')
    rep = generate(base, 'lift_block', 2, tmp_path, seed=3, workers=1, config=cfg,
                   progress=False)
    assert rep.made == 2 and rep.successes == 2, [e.reason for e in rep.episodes]
    for e in rep.episodes:
        with Episode.open(tmp_path / e.name) as ep:
            meta = ep.metadata['metadata']
            assert ep.streams['/cameras/front/image_raw'].count > 10
        assert meta['program'] == {'task': 'lift_block', 'steps': list(TASK.program)}
        assert meta['success_reason'] == 'block held above the table'
        start = meta['randomisation']['objects'][BLOCK]['pos']
        final = meta['final_object_states'][BLOCK]['pos']
        assert final[2] > start[2] + 0.05                     # it really is up in the air


def test_bench_lab_evaluates_the_scripted_expert_with_the_task_check(lift_block):
    data = yaml.safe_load(LAB.read_text())
    data['tasks'] = {'lift_block': LAB_SECTION}
    lab = BenchLab(LabConfig.from_dict(data, str(LAB)))
    try:
        lab.reset('lift_block', 0)
        lab.command_positions(lab.robot.home)
        lab.step(200)
        ok, reason = lab.check_success()
        assert not ok and 'needs 0.05' in reason             # resting on the table: fails
        for seed, region in [(1, 'id'), (2, 'ood')]:
            ok, duration = run_expert_episode(lab, lab.robot, 'lift_block', seed, region)
            assert ok, (seed, region, lab.check_success()[1])
            assert 1.0 < duration < 10.0
            z = lab.task_state()['objects'][BLOCK]['pos'][2]
            assert z > 0.0225 + 0.05 and np.isfinite(z)
    finally:
        lab.close()
