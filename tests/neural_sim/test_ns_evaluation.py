"""Evaluation: the action-consistency trackers measure motion offsets and find objects by
colour near their true position, and the ablation command writes one table with all five rows
and finite numbers, plus the picture grid."""

import math

import numpy as np
import pytest
from ns_episodes import paired_episode
from ns_helpers import one_thread, randomise, tiny_config  # noqa: F401

from comsim_neural_sim.data import synthetic_pair
from comsim_neural_sim.errors import MissingStreamError
from comsim_neural_sim.evaluation import (
    ABLATION_MODES,
    action_consistency,
    find_object,
    run_ablation,
)
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


def test_find_object_takes_shaded_faces_not_other_dark_things_nor_far_ones():
    """A red block, lit top and shadowed side, with the dark grey gripper touching it: the
    colour samples accept both faces and not the grey; a red thing outside the window does
    not count, so a missing block is not found."""
    f = np.full((60, 80, 3), (150, 130, 100), np.uint8)
    f[20:26, 30:40] = (200, 40, 30)          # top face
    f[26:30, 30:40] = (90, 15, 12)           # shaded face
    f[14:20, 28:42] = (40, 40, 44)           # gripper above it
    entry = {'centroid': [34.5, 24.5], 'box': [29.5, 19.5, 39.5, 29.5], 'pixels': 100,
             'color': [156, 30, 23], 'color_samples': [[200, 40, 30], [90, 15, 12]]}
    assert np.allclose(find_object(f, entry), [34.5, 24.5])
    assert find_object(f, {**entry, 'color_samples': None}) is None   # one mean: neither face
    gone = f.copy()
    gone[20:30, 30:40] = (150, 130, 100)
    gone[50:56, 70:76] = (200, 40, 30)       # a red distractor far away
    assert find_object(gone, entry) is None


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
