"""The main job's one report module renders stage results (dataclasses) into markdown whose
numbers, intervals and picture links are right; a stage's wording lives only there."""
import sys
from pathlib import Path

import numpy as np

from comsim_core.report.images import save_png
from comsim_policy.evaluation.results import Evaluation, Rollout
from comsim_policy.stage import PolicyStageResult, TrainedPolicy
from comsim_teleop.report.recording import EpisodeRow, RecordingSummary, TopicRow

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / 'scripts'))
import report  # noqa: E402


def test_success_table_gives_k_of_n_with_its_wilson_interval():
    table = report.success_table([('a', True), ('a', False), ('b', False)])
    assert '| a | 1/2 | 50 % | 9–91 % |' in table
    assert '| b | 0/1 | 0 % | 0–79 % |' in table


def test_action_error_is_shown_in_each_numbers_unit(tmp_path):
    def trained(by_name):
        return TrainedPolicy('a', tmp_path, {}, 10, 1.0, 1.0, 0.1, 0.02, None, 'move_card',
                             'A', by_name)
    ee = trained({'x': 0.004, 'y': 0.006, 'z': 0.002, 'yaw': 0.05, 'gripper': 0.001})
    assert report.action_error(ee) == '4.0 mm, yaw 0.050 rad, gripper 0.0010'
    joints = trained({'joint1': 0.01, 'joint2': 0.03, 'gripper': 0.002})
    assert report.action_error(joints) == 'joints 0.0200 rad, gripper 0.0020'
    assert report.action_error(trained({})) == '0.0200'     # logged before per-number errors


def test_recording_section_keeps_going_past_an_unreadable_episode(tmp_path):
    gone = tmp_path / 'episodes' / 'ep_000'
    summary = RecordingSummary(
        episodes_dir=tmp_path / 'episodes',
        episodes=[EpisodeRow(gone, 'move_card', True, 'complete', 4.2, 1.5, 0, 0.98)],
        topics=[TopicRow('/joint_states', 840, 199.6, 200.0, 198.2, 0, 1, 0.011)])
    md = report.recording_section(summary, tmp_path, ['/cameras/front/image_raw'],
                                  [('move_card', True)], wall_s=12.0)
    for title in ('## Recording', '### Per topic, over all episodes', '### Contact sheets'):
        assert title in md
    assert '| ep_000 | move_card | True | complete | 4.2 | 1.5 | 0 | 98 % |' in md
    assert '| `/joint_states` | 840 | 199.60 | 200.0 | 198.20 | 0 | 1 | 0.011 |' in md
    assert '- ep_000: no contact sheet' in md


def test_policy_section_links_pictures_relative_to_the_report(tmp_path):
    png = save_png(tmp_path / 'pictures' / 'rollout.png', np.zeros((8, 8, 3), np.uint8))
    rollouts = [Rollout('real', 'move_card', 'id', 'default', 1000, True, 'ok', 9.0, 4.0),
                Rollout('real', 'move_card', 'id', 'default', 1001, False, 'timeout', 15, 6.0),
                Rollout('real_pseudo', 'move_card', 'id', 'default', 1000, False, 'timeout', 15,
                        6.0),
                Rollout('real_pseudo', 'move_card', 'id', 'default', 1001, False, 'timeout', 15,
                        6.0)]
    res = PolicyStageResult(
        device='cpu', cameras=2, image_size=[96, 128], down_dims=[64, 128], batch_size=32,
        inference_steps=8, checkpoints=tmp_path / 'policy',
        trained=[TrainedPolicy('real', tmp_path / 'policy' / 'real', {'sources': {'real': 5}},
                               1800, 60.0, 900.0, 0.21, 0.097, 0.011, 'move_card')],
        rollouts=2, regions=['id'], eval_seed=1000, timeout_factor=2.0, eval_wall_s=100.0,
        evaluation=Evaluation(rollouts), pictures=[(rollouts[0], png)], wall_s=1000.0)
    md = report.policy_section(res, tmp_path)
    assert md.startswith('## Policy')
    assert 'checkpoints under `policy/`' in md
    assert '| real | move_card | real 5 | 1800 | 60 | 900 | 0.2100 | 0.0970 | 0.0110 |' in md
    assert '| real | move_card | id | default | 1/2 | 50 % | 9–91 % | 5.0 |' in md
    assert '2 rollouts per checkpoint, task and region (id layouts' in md
    # the paired test on the same seeds: one discordant pair, p = 1
    assert '| real | real_pseudo | move_card | id | default | 2 | 1 | 0 | 1 | 0 | 1 |' in md
    assert '![real move_card](pictures/rollout.png)' in md
