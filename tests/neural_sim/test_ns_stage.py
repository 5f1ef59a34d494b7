"""Main-job stage: trains, translates, ablates and returns what it measured; clear errors."""

import numpy as np
import pytest
from ns_episodes import paired_episode, sim_episode
from ns_helpers import one_thread, tiny_config  # noqa: F401

from comsim_core.episodes.paired import appearance_variant_name
from comsim_neural_sim.data.clips import PairedClip
from comsim_neural_sim.errors import NeuralSimError
from comsim_neural_sim.evaluation import ABLATION_MODES
from comsim_neural_sim.stage import neural_sim_stage, training_clips


def test_stage_end_to_end(tmp_path):
    for i in range(2):
        sim_episode(tmp_path / 'sim', f'ep{i}', frames=5, seed=i)
        paired_episode(tmp_path / 'paired', f'pair{i}', frames=8, seed=i,
                       cameras=('front', 'side'))
    res = neural_sim_stage(tmp_path / 'o', tmp_path / 'paired', tmp_path / 'sim',
                           log=lambda s: None, train_steps=3, config=tiny_config(), steps=1)
    assert sorted(p.name for p in res.pseudo_real.glob('ep*')) == ['ep0', 'ep1']
    assert res.sim_episodes == 2 and res.train_steps == 3 and res.sample_steps == 1
    assert list(res.ablation.rows) == list(ABLATION_MODES)
    assert 'joint conditioning' in res.ablation.rows
    assert res.held_out == ['pair1'] and res.train_episodes == 1
    assert res.cameras == ['front', 'side']
    assert res.grid == tmp_path / 'o' / 'pictures' / 'neural_sim_grid.png' and res.grid.is_file()
    assert res.generated is None                          # no ground-truth renderer given


def test_stage_refuses_to_translate_a_camera_it_never_trained_on(tmp_path):
    sim_episode(tmp_path / 'sim', 'ep0', frames=5, seed=0)   # front and side
    for i in range(2):
        paired_episode(tmp_path / 'paired', f'pair{i}', frames=8, seed=i)   # front only
    with pytest.raises(NeuralSimError, match="camera 'side'.*trained on cameras"):
        neural_sim_stage(tmp_path / 'o', tmp_path / 'paired', tmp_path / 'sim',
                         log=lambda s: None, train_steps=1, config=tiny_config(), steps=1)


def test_stage_names_missing_inputs(tmp_path):
    with pytest.raises(NeuralSimError, match='no paired-episode directory'):
        neural_sim_stage(tmp_path, tmp_path / 'nope', tmp_path, log=lambda s: None)
    (tmp_path / 'paired').mkdir()
    (tmp_path / 'sim').mkdir()
    with pytest.raises(NeuralSimError, match='no sim episodes'):
        neural_sim_stage(tmp_path, tmp_path / 'paired', tmp_path / 'sim', log=lambda s: None)


def test_a_rerun_stage_keeps_its_trained_checkpoint_and_translations(tmp_path):
    """The experiment resumes a stage that was interrupted after training: the checkpoint is
    not retrained (its translations on disk would then come from two models), finished
    translations are skipped, and the losses reported are the run's."""
    for i in range(2):
        sim_episode(tmp_path / 'sim', f'ep{i}', frames=5, seed=i)
        paired_episode(tmp_path / 'paired', f'pair{i}', frames=8, seed=i,
                       cameras=('front', 'side'))
    kwargs = dict(train_steps=3, config=tiny_config(), steps=1)
    first = neural_sim_stage(tmp_path / 'o', tmp_path / 'paired', tmp_path / 'sim',
                             log=lambda s: None, **kwargs)
    weights = tmp_path / 'o' / 'checkpoint' / 'transformer' / 'diffusion_pytorch_model.safetensors'
    before = weights.read_bytes()
    lines: list[str] = []
    again = neural_sim_stage(tmp_path / 'o', tmp_path / 'paired', tmp_path / 'sim',
                             log=lines.append, **kwargs)
    assert weights.read_bytes() == before
    assert any('resumed at step 3' in ln for ln in lines), lines
    assert sum('already translated' in ln for ln in lines) == 2, lines
    assert (again.first_loss, again.last_loss) == (first.first_loss, first.last_loss)
    assert again.first_loss == again.first_loss            # not NaN


def test_appearance_variants_train_beside_their_pairs_and_the_held_out_ones_stay_out(tmp_path):
    """Replays of the demos in other twin looks are more pairs; the held-out pair's own
    variants would put its real footage into training, so they are left out with it."""
    for i in range(2):
        sim_episode(tmp_path / 'sim', f'ep{i}', frames=5, seed=i)
        paired_episode(tmp_path / 'paired', f'pair{i}', frames=8, seed=i,
                       cameras=('front', 'side'))
        for k in (1, 2):
            paired_episode(tmp_path / 'looks', appearance_variant_name(f'pair{i}', k), frames=8,
                           seed=10 * i + k, cameras=('front', 'side'))
    res = neural_sim_stage(tmp_path / 'o', tmp_path / 'paired', tmp_path / 'sim',
                           log=lambda s: None, train_steps=2, config=tiny_config(), steps=1,
                           variants_dir=tmp_path / 'looks')
    assert res.held_out == ['pair1'] and res.train_episodes == 1
    assert res.train_variants == 2                        # pair0_app1, pair0_app2


def test_training_clips_leave_out_the_held_pair_and_its_variants():
    clips = [PairedClip(np.zeros((2, 4, 4, 3), np.uint8), np.zeros((2, 4, 4, 3), np.uint8),
                        np.zeros((2, 3)), name) for name in
             ('a', 'b', 'a_app1', 'b_app1', 'b_app12', 'b_apple')]
    assert [c.name for c in training_clips(clips, 'b')] == ['a', 'a_app1', 'b_apple']
    assert len(training_clips(clips, None)) == len(clips)
