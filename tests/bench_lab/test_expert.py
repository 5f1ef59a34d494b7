"""Scripted expert solves each task under realism physics; its commands are smooth."""
import os
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault('MUJOCO_GL', 'egl')

from comsim_bench_lab.config import LabConfig  # noqa: E402
from comsim_bench_lab.lab import BenchLab  # noqa: E402
from comsim_bench_lab.realism import RealismProfile  # noqa: E402
from comsim_bench_lab.rollout import run_expert_episode  # noqa: E402
from comsim_core.tasks.expert import ScriptedExpert  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope='module')
def lab():
    lab = BenchLab(LabConfig.load(ROOT / 'config/bench_lab/lab.yaml'),
                   realism=RealismProfile.load(ROOT / 'config/bench_lab/realism.yaml'))
    yield lab
    lab.close()


@pytest.mark.parametrize('task, variant', [('stack_blocks', None), ('stack_blocks', 'cylinders'),
                                           ('move_card', None), ('shake_bottle', 'tall')])
def test_expert_succeeds_id_and_ood(lab, task, variant):
    for seed, region in [(100, 'id'), (101, 'ood')]:
        ok, duration = run_expert_episode(lab, lab.robot, task, seed, region, variant)
        assert ok, (task, region, seed, lab.check_success()[1])
        assert 3.0 < duration < 12.0


def test_doing_nothing_fails(lab):
    for task in ('stack_blocks', 'move_card', 'shake_bottle'):
        lab.reset(task, 0)
        lab.command_positions(lab.robot.home)
        lab.step(500)
        assert not lab.check_success()[0]


def test_commands_smooth_and_varied(lab):
    lab.reset('shake_bottle', 4)
    state = lab.task_state()
    runs = []
    for seed in (1, 2):
        expert = ScriptedExpert(lab.robot, state, seed)
        q, t, cmds = lab.robot.home.copy(), 0.0, []
        while (cmd := expert.command(t, q)) is not None:
            cmds.append(cmd)
            q = cmd
            t += 0.02
        cmds = np.array(cmds)
        speed = np.abs(np.diff(cmds, axis=0)) / 0.02
        assert np.all(speed <= lab.robot.max_velocity * 1.05)
        assert np.all(cmds >= lab.robot.lower - 1e-9) and np.all(cmds <= lab.robot.upper + 1e-9)
        runs.append(cmds)
    assert len(runs[0]) != len(runs[1]) or not np.allclose(runs[0], runs[1])


def test_expert_rejects_unknown_task(lab):
    with pytest.raises(ValueError, match='stack_blocks'):
        ScriptedExpert(lab.robot, {'task': 'juggle'}, 0)
