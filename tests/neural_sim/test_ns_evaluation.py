"""Evaluation: the action-consistency tracker measures motion offsets, and the ablation
command writes one table with all five rows and finite numbers, plus the picture grid."""

import math

import numpy as np
import pytest
from ns_episodes import paired_episode
from ns_helpers import one_thread, randomise, tiny_config  # noqa: F401

from comsim_neural_sim.data import synthetic_pair
from comsim_neural_sim.errors import MissingStreamError
from comsim_neural_sim.evaluation import ABLATION_MODES, action_consistency, run_ablation
from comsim_neural_sim.evaluation.ablation import main as ablation_main
from comsim_neural_sim.sampling.pipeline import new_pipeline


def test_action_consistency_tracks_a_shifted_gripper():
    real = synthetic_pair(10, 48, 48, seed=2).real
    same = action_consistency(real, real)
    assert same['centroid_px'] == 0.0 and same['mask_iou'] == 1.0
    shifted = np.roll(real, 5, axis=2)          # everything 5 px to the right
    got = action_consistency(shifted, real)
    assert 3.0 < got['centroid_px'] < 7.0, got
    frozen = np.repeat(real[:1], len(real), 0)  # a video that ignores the actions
    assert action_consistency(frozen, real)['centroid_px'] > got['centroid_px']


@pytest.fixture(scope='module')
def ablation(tmp_path_factory):
    root = tmp_path_factory.mktemp('abl')
    paired_episode(root / 'paired', 'held0', frames=10, seed=5, cameras=('front', 'side'))
    pipe = new_pipeline(tiny_config())
    randomise(pipe.transformer, seed=1, scale=0.1)
    pipe.save_pretrained(root / 'ckpt')
    res = run_ablation(root / 'ckpt', root / 'paired', root / 'out', steps=2,
                       log=lambda s: None)
    return root, res


def test_ablation_table_has_five_finite_rows(ablation):
    root, res = ablation
    assert list(res.rows) == list(ABLATION_MODES) and len(res.rows) == 5
    for row in res.rows.values():
        assert all(math.isfinite(v) for v in row.values()), row
    md = (root / 'out' / 'ablation.md').read_text()
    assert all(f'| {k} |' in md for k in ABLATION_MODES)
    assert 'not computed' in md                                  # learned metrics, honestly
    assert (root / 'out' / 'ablation_grid.png').stat().st_size > 0
    # the floor is the twin's own frames: a random network must not beat it on PSNR here
    assert res.rows['twin frames (floor)']['psnr'] != res.rows['both composed']['psnr']


def test_ablation_cli_and_missing_stream(ablation, tmp_path, capsys):
    root, _ = ablation
    assert ablation_main(['--checkpoint', str(root / 'ckpt'), '--paired', str(root / 'paired'),
                          '--out', str(tmp_path / 'o'), '--steps', '1']) == 0
    assert '| joint conditioning |' in capsys.readouterr().out
    paired_episode(tmp_path / 'bad', 'no_sim', frames=4, streams=('real',))
    with pytest.raises(MissingStreamError, match='/sim/cameras/front/image_raw'):
        run_ablation(root / 'ckpt', tmp_path / 'bad', tmp_path / 'o2', log=lambda s: None)
