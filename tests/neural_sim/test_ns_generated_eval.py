"""Translated generated episodes scored against (bench-lab style) ground truth: a perfect
translation beats the sim floor, frames match by stamp, clear errors, and the main-job stage
adds the table when it is given a ground-truth renderer."""

import ast
import json
from pathlib import Path

import numpy as np
import pytest
from ns_episodes import CMD, paired_episode, sim_episode
from ns_ground_truth import ground_truth_episode, look_real
from ns_helpers import one_thread, tiny_config  # noqa: F401

from comsim_neural_sim.errors import NeuralSimError
from comsim_neural_sim.evaluation.generated import evaluate_generated, main
from comsim_neural_sim.pipeline import generated_section, neural_sim_stage, pick_per_task
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
    assert '| **mean** |' in perfect.table and '| episode_0000_task | front | 4 |' in perfect.table
    saved = json.loads((tmp_path / 'generated.json').read_text())
    assert saved['mean']['translated_psnr'] == pytest.approx(100.0)
    assert (tmp_path / 'generated_grid.png').stat().st_size > 0


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


def test_stage_adds_the_ground_truth_table(tmp_path):
    for i in range(2):
        sim_episode(tmp_path / 'sim' / f'task{i}', f'ep{i}', frames=5, seed=i)
        paired_episode(tmp_path / 'paired', f'pair{i}', frames=8, seed=i,
                       cameras=('front', 'side'))
    asked = []

    def render(sims, out_dir, cameras, max_frames):
        asked.append(([p.name for p in sims], cameras, max_frames))
        for s in sims:
            ground_truth_episode(s, out_dir, cameras, max_frames)

    md, pseudo = neural_sim_stage(tmp_path / 'o', tmp_path / 'paired', tmp_path / 'sim',
                                  log=lambda s: None, train_steps=2, config=tiny_config(),
                                  steps=1, ground_truth=render, ground_truth_episodes=2,
                                  ground_truth_frames=3)
    assert asked == [(['ep0', 'ep1'], ['front', 'side'], 3)]
    assert '### Translated generated episodes vs bench-lab ground truth' in md
    assert '| ep0 | front | 3 |' in md and '| ep1 | side | 3 |' in md
    assert 'generated_eval/generated_grid.png' in md
    assert (tmp_path / 'o' / 'generated_eval' / 'generated_grid.png').is_file()

    def broken(sims, out_dir, cameras, max_frames):
        raise RuntimeError('no EGL here')

    text = generated_section(tmp_path / 'o2', [tmp_path / 'sim' / 'task0' / 'ep0'], pseudo,
                             broken, ['front'], log=lambda s: None)
    assert 'Not available: RuntimeError: no EGL here' in text


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
