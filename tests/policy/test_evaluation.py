"""Closed-loop evaluation over DDS (the deployment check; tests/policy/test_in_process_evaluation.py
covers the in-process mode) with a tiny untrained checkpoint: the graph runs, every
rollout is recorded as a readable bag, and the table counts rollouts (success not required)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from comsim_core.episodes.reader import Episode
from comsim_policy.checkpoint import save_pretrained
from comsim_policy.config import ModelConfig, PolicyConfig
from comsim_policy.evaluation.closed_loop import evaluate
from comsim_policy.evaluation.results import Evaluation, Rollout
from comsim_policy.model.policy import DiffusionPolicyModel

CAMS = ['/cameras/front/image_raw', '/cameras/side/image_raw']


def tiny_checkpoint(path: Path) -> Path:
    config = PolicyConfig(camera_topics=CAMS, camera_sizes={c: [240, 320] for c in CAMS},
                          image_size=[36, 48], crop_size=[32, 40],
                          model=ModelConfig(down_dims=[16, 32], diffusion_step_embed_dim=16,
                                            vision_width=8, num_keypoints=8))
    config.scheduler.num_inference_steps = 4
    return save_pretrained(DiffusionPolicyModel(config), path)


def test_table_counts_per_combination():
    rolls = [Rollout('a', 'stack_blocks', 'id', '', k, k < 2, '', 1.0, 1.0) for k in range(3)]
    rolls.append(Rollout('a', 'stack_blocks', 'ood', '', 0, False, '', 1.0, 1.0))
    table = Evaluation(rolls).table()
    assert [(r['region'], r['successes'], r['rollouts']) for r in table] == \
        [('id', 2, 3), ('ood', 0, 1)]
    table_md = Evaluation(rolls).markdown()   # k/N with its Wilson interval
    assert '| a | stack_blocks | id | default | 2/3 | 67 % | 21–94 % |' in table_md


@pytest.mark.ros
def test_two_short_rollouts_are_recorded_and_tabled(tmp_path):
    ckpt = tiny_checkpoint(tmp_path / 'tiny')
    out = tmp_path / 'eval'
    result = evaluate([ckpt], ['move_card'], 1, regions=('id', 'ood'), out_dir=out,
                      timeout_s=2.0, check_every_s=1.0, sheets=1,
                      lab={'camera_rate_hz': 10.0}, policy={'device': 'cpu'})
    assert [(r.region, r.seed) for r in result.rollouts] == [('id', 0), ('ood', 0)]
    table = result.table()
    assert [(r['checkpoint'], r['task'], r['region'], r['rollouts']) for r in table] == \
        [('tiny', 'move_card', 'id', 1), ('tiny', 'move_card', 'ood', 1)]
    assert (out / 'results.json').exists()
    for r in result.rollouts:
        assert r.sim_s >= 2.0 and 'timeout' in r.message or r.success
        with Episode.open(r.bag) as ep:
            assert ep.metadata['metadata']['task'] == 'move_card'
            assert ep.metadata['metadata']['operator'] == 'policy:tiny'
            assert ep.streams['/cameras/front/image_raw'].count >= 10
            assert ep.streams['/joint_states'].count > 100
            # The policy drove the arm: its chunks are in the bag.
            traj = ep.streams['/joint_trajectory_controller/joint_trajectory'].count
            assert traj >= 1, ep.streams
        assert r.sheet and Path(r.sheet).stat().st_size > 1000
    assert np.all([Path(r.bag).is_dir() for r in result.rollouts])


def test_cli_config_refuses_typos_and_missing_checkpoints(tmp_path, capsys):
    from comsim_core.errors import UserError
    from comsim_policy.evaluation.cli import load_config, main

    assert load_config(None).regions == ['id', 'ood']  # config/evaluation.yaml
    bad = tmp_path / 'eval.yaml'
    bad.write_text('evaluation:\n  rollout: 3\n')
    with pytest.raises(UserError, match="unknown key"):
        load_config(str(bad))
    assert main(['--checkpoints', str(tmp_path / 'nope')]) == 2
    assert 'not found' in capsys.readouterr().err
    bad.write_text('evaluation:\n  mode: ros\n')
    with pytest.raises(UserError, match="mode 'ros' is not one of"):
        load_config(str(bad))
    bad.write_text('evaluation:\n  env: no_such_module:Lab\n')
    ckpt = tiny_checkpoint(tmp_path / 'ckpt')
    assert main(['--checkpoints', str(ckpt), '--config', str(bad)]) == 2
    assert "env 'no_such_module:Lab' is not an importable" in capsys.readouterr().err
