"""Translated generated episodes scored against (bench-lab style) ground truth: a perfect
translation beats the sim floor, objects are found where the ground truth's positions.json has
them (a shift of k px costs k px, an erased object is not found), frames match by stamp, clear
errors, and the main-job stage scores them when it is given a ground-truth renderer."""

import ast
import json
from pathlib import Path

import numpy as np
import pytest
from ns_episodes import CMD, paired_episode, sim_episode
from ns_ground_truth import (
    BACKGROUND,
    OBJECTS,
    ground_truth_episode,
    look_real,
    object_sim_episode,
    square,
)
from ns_helpers import one_thread, tiny_config  # noqa: F401

from comsim_neural_sim.errors import NeuralSimError
from comsim_neural_sim.evaluation.generated import evaluate_generated, main, markdown_table
from comsim_neural_sim.stage import neural_sim_stage, pick_per_task, score_generated
from comsim_neural_sim.translate.episode import read_sim_episode, write_translated


def _translate(sim: Path, out: Path, fn) -> Path:
    """A pseudo-real episode written by the real translation writer, pixels from ``fn``."""
    ep = read_sim_episode(sim, CMD)
    frames = {t: np.stack([fn(f) for f in fr]) for t, (_, fr) in ep.images.items()}
    return write_translated(ep, frames, out, {'test': True})


@pytest.fixture(scope='module')
def episodes(tmp_path_factory):
    root = tmp_path_factory.mktemp('gen_eval')
    sims = [sim_episode(root / 'sim', f'episode_000{i}_task', frames=6, seed=i) for i in range(2)]
    for s in sims:
        ground_truth_episode(s, root / 'truth', max_frames=4)
        _translate(s, root / 'perfect', look_real)                 # the ground truth itself
        _translate(s, root / 'poor', lambda f: np.clip(f.astype(int) + 60, 0, 255)
                   .astype(np.uint8))
    return root, sims


def test_a_perfect_translation_beats_the_sim_floor(episodes, tmp_path):
    root, _ = episodes
    perfect = evaluate_generated(root / 'perfect', root / 'truth', tmp_path, log=lambda s: None)
    poor = evaluate_generated(root / 'poor', root / 'truth', log=lambda s: None)
    assert len(perfect.rows) == 4                      # 2 episodes x 2 cameras
    assert all(r['frames'] == 4 for r in perfect.rows)  # the ground truth's subset, by stamp
    for r in perfect.rows:
        assert r['translated_psnr'] == 100.0 and r['translated_ssim'] == pytest.approx(1.0)
        assert r['sim_psnr'] < 30 and r['sim_ssim'] < 0.95
    m, p = perfect.mean, poor.mean
    assert m['translated_psnr'] > m['sim_psnr'] and m['translated_ssim'] > m['sim_ssim']
    assert p['translated_psnr'] < m['translated_psnr']
    assert p['sim_psnr'] == pytest.approx(m['sim_psnr'])    # the floor does not depend on it
    table = markdown_table(perfect.rows, perfect.mean)
    assert '| **mean** |' in table and '| episode_0000_task | front | 4 |' in table
    saved = json.loads((tmp_path / 'generated.json').read_text())
    assert saved['mean']['translated_psnr'] == pytest.approx(100.0)
    assert (tmp_path / 'generated_grid.png').stat().st_size > 0
    # no positions.json in these ground truths: no object columns, said so, not zeros
    assert all(r['translated_obj_px'] is None and r['objects'] == {} for r in perfect.rows)
    assert saved['mean']['translated_found'] is None
    assert '| 1.000 | – | – | – | – | – | – |' in table


@pytest.fixture(scope='module')
def objects(tmp_path_factory):
    """A sim episode of two coloured squares, its ground truth with positions.json."""
    root = tmp_path_factory.mktemp('objects')
    sim = object_sim_episode(root / 'sim', 'episode_0000_objects', frames=5)
    ground_truth_episode(sim, root / 'truth', positions=True)
    return root, sim


def _score(objects, name, fn, out=None):
    root, sim = objects
    _translate(sim, root / name, fn)
    res = evaluate_generated(root / name, root / 'truth', out, log=lambda s: None)
    assert len(res.rows) == 1
    return res.rows[0], res


def test_objects_are_found_where_the_ground_truth_has_them(objects, tmp_path):
    row, res = _score(objects, 'perfect', look_real, tmp_path)
    assert row['translated_obj_px'] == pytest.approx(0.0, abs=1e-6)
    assert row['translated_found'] == 1.0 and row['truth_obj_px'] == pytest.approx(0.0, abs=1e-6)
    assert row['sim_obj_px'] == pytest.approx(0.0, abs=1e-6) and row['sim_found'] == 1.0
    red = row['objects']['red_block']
    assert len(red['stamps']) == 5 and red['translated_px'] == [0.0] * 5    # per frame
    saved = json.loads((tmp_path / 'generated.json').read_text())
    assert saved['rows'][0]['objects']['blue_block']['sim_px'] == [0.0] * 5
    table = markdown_table(res.rows, res.mean)
    assert 'object px translated' in table and '| 0.0 | 0.0 | 1.00 | 1.00 |' in table
    for k in (2, 4):                           # the whole translation k px to the right
        row, _ = _score(objects, f'shift{k}', lambda f, k=k: np.roll(look_real(f), k, axis=1))
        assert row['translated_obj_px'] == pytest.approx(k, abs=0.3), row
        assert row['translated_found'] == 1.0 and row['sim_obj_px'] == pytest.approx(0.0)


def _erase_red(f: np.ndarray) -> np.ndarray:
    """The red square painted over with the background, a red one drawn far from it."""
    f = f.copy()
    f[(f == OBJECTS['red_block']).all(-1)] = BACKGROUND
    return look_real(square(f, 40, 32, 5, OBJECTS['red_block']))


def test_an_object_that_is_not_there_is_not_found(objects):
    row, _ = _score(objects, 'erased', _erase_red)
    assert row['translated_found'] == 0.5              # the blue square, in every frame
    assert row['objects']['red_block']['translated_px'] == [None] * 5
    assert row['translated_obj_px'] == pytest.approx(0.0, abs=1e-6)   # the blue one is exact
    assert row['sim_found'] == row['truth_found'] == 1.0


def test_matching_by_name_and_stamp_with_clear_errors(episodes, tmp_path):
    root, sims = episodes
    one = evaluate_generated([root / 'perfect' / sims[0].name], root / 'truth', cameras=['side'],
                             log=lambda s: None)
    assert [(r['episode'], r['camera']) for r in one.rows] == [(sims[0].name, 'side')]
    assert one.missing == [sims[1].name]
    ground_truth_episode(sims[0], tmp_path / 'shifted', max_frames=4, stamp_shift_ns=1)
    with pytest.raises(NeuralSimError, match='share no frame stamp'):
        evaluate_generated(root / 'perfect', tmp_path / 'shifted', log=lambda s: None)
    with pytest.raises(NeuralSimError, match='no bench-lab ground-truth episodes'):
        evaluate_generated(root / 'perfect', root / 'sim', log=lambda s: None)
    with pytest.raises(NeuralSimError, match='no translated episode matches'):
        evaluate_generated(root / 'sim' / 'nothing', root / 'truth', log=lambda s: None)
    with pytest.raises(FileNotFoundError):
        evaluate_generated(root / 'perfect', tmp_path / 'absent', log=lambda s: None)


def test_cli(episodes, capsys, tmp_path):
    root, _ = episodes
    assert main(['--pseudo-real', str(root / 'perfect'), '--ground-truth',
                 str(root / 'truth')]) == 0
    assert '| **mean** |' in capsys.readouterr().out
    assert main(['--pseudo-real', str(root / 'perfect'), '--ground-truth',
                 str(tmp_path)]) == 2
    assert 'no bench-lab ground-truth' in capsys.readouterr().err


def test_pick_per_task_takes_tasks_in_turn():
    sims = [Path(f'sim/{t}/episode_{i}_{t}') for t in ('a', 'b') for i in range(3)]
    assert [p.parent.name for p in pick_per_task(sims, 3)] == ['a', 'b', 'a']
    assert pick_per_task(sims, 0) == []


def test_stage_scores_against_the_ground_truth(tmp_path):
    for i in range(2):
        sim_episode(tmp_path / 'sim' / f'task{i}', f'ep{i}', frames=5, seed=i)
        paired_episode(tmp_path / 'paired', f'pair{i}', frames=8, seed=i,
                       cameras=('front', 'side'))
    asked = []

    def render(sims, out_dir, cameras, max_frames):
        asked.append(([p.name for p in sims], cameras, max_frames))
        for s in sims:
            ground_truth_episode(s, out_dir, cameras, max_frames)

    res = neural_sim_stage(tmp_path / 'o', tmp_path / 'paired', tmp_path / 'sim',
                           log=lambda s: None, train_steps=2, config=tiny_config(), steps=1,
                           ground_truth=render, ground_truth_episodes=2, ground_truth_frames=3)
    assert asked == [(['ep0', 'ep1'], ['front', 'side'], 3)]
    gen = res.generated
    assert gen.error is None and gen.episodes == ['ep0', 'ep1'] and gen.max_frames == 3
    assert gen.cameras == ['front', 'side']
    scored = [(r['episode'], r['camera'], r['frames']) for r in gen.result.rows]
    assert ('ep0', 'front', 3) in scored and ('ep1', 'side', 3) in scored
    assert gen.result.grid == tmp_path / 'o' / 'generated_eval' / 'generated_grid.png'
    assert gen.result.grid.is_file()

    def broken(sims, out_dir, cameras, max_frames):
        raise RuntimeError('no EGL here')

    failed = score_generated(tmp_path / 'o2', [tmp_path / 'sim' / 'task0' / 'ep0'],
                             res.pseudo_real, broken, ['front'], log=lambda s: None)
    assert failed.error == 'RuntimeError: no EGL here' and failed.result is None
    assert failed.episodes == ['ep0']


def test_the_neural_simulator_never_imports_the_bench_lab():
    """It reads the bench lab's ground-truth episodes as files; the import stays one way."""
    src = Path(__file__).resolve().parents[2] / 'src' / 'comsim_neural_sim' / 'comsim_neural_sim'
    files = sorted(src.rglob('*.py'))
    assert any(f.name == 'generated.py' for f in files)
    offenders = []
    for f in files:
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ''] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f'{f.name}: {n}' for n in names if n.split('.')[0] == 'comsim_bench_lab']
    assert not offenders


def test_scoring_in_the_policys_pixels_scales_object_errors_and_resizes_frames(objects):
    root, sim = objects
    _translate(sim, root / 'shift4p', lambda f: np.roll(look_real(f), 4, axis=1))
    full = evaluate_generated(root / 'shift4p', root / 'truth', log=lambda s: None).rows[0]
    half = evaluate_generated(root / 'shift4p', root / 'truth', log=lambda s: None,
                              pixels=(20, 24)).rows[0]        # the 40x48 frames halved
    assert full['translated_obj_px'] == pytest.approx(4, abs=0.3)
    assert half['translated_obj_px'] == pytest.approx(2, abs=0.15)
    assert half['translated_found'] == full['translated_found'] == 1.0
    assert half['translated_psnr'] != full['translated_psnr']      # scored on resized frames
