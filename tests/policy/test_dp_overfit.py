"""A tiny policy trained through the CLI overfits recorded episodes and reproduces actions."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from comsim_core.episodes import Episode
from comsim_policy.checkpoint import load_config
from comsim_policy.evaluation import open_loop
from comsim_policy.inference import PolicyRunner
from comsim_policy.training.train import main
from fixtures.policy_episodes import FRONT, expected_actions, tiny_config, write_episode

SEEDS = (0, 1)
N_FRAMES = 30


@pytest.fixture(scope='module')
def trained(tmp_path_factory):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)   # small ops: one thread is faster and immune to a busy machine
    root = tmp_path_factory.mktemp('overfit')
    for s in SEEDS:
        write_episode(root / 'eps', s, n_frames=N_FRAMES)
    cfg = tiny_config(max_steps=400, lr=3e-3, log_every=100, checkpoint_every=200,
                      cache_dir=str(root / 'cache'))
    cfg.model.down_dims = [64, 128]
    cfg.to_yaml(root / 'tiny.yaml')
    main(['--config', str(root / 'tiny.yaml'), '--data', f'{root / "eps"}:real',
          '--out', str(root / 'ckpt')])
    yield root
    torch.set_num_threads(threads)


def _log(root: Path) -> list[dict]:
    return [json.loads(x) for x in (root / 'ckpt' / 'log.jsonl').read_text().splitlines()]


def test_loss_falls_far(trained):
    losses = [r['loss'] for r in _log(trained) if 'loss' in r]
    assert len(losses) == 4
    assert losses[-1] < 0.15 * losses[0], losses


def test_runner_reproduces_recorded_actions(trained):
    runner = PolicyRunner.load(trained / 'ckpt', device='cpu')
    cfg = runner.config
    assert cfg.camera_sizes == {FRONT: [48, 64]}            # filled from the data
    assert cfg.control_hz == pytest.approx(10.0, rel=1e-3)
    errors, holds = [], []
    for seed, path in zip(SEEDS, sorted((trained / 'eps').iterdir()), strict=True):
        with Episode.open(path) as ep:
            frames = list(ep.frames([FRONT]))
            js = ep.joint_states()
        want = expected_actions(seed, N_FRAMES)
        for t in range(1, N_FRAMES - cfg.horizon, 3):
            imgs = {FRONT: np.stack([frames[t - 1].images[FRONT], frames[t].images[FRONT]])}
            state = np.stack([np.interp(frames[k].t_ns, js.t_ns, js.position[:, j])
                              for k in (t - 1, t) for j in range(7)]).reshape(2, 7)
            pred = runner.predict(imgs, state, seed=0)
            assert pred.shape == (cfg.horizon, 7)
            target = want[t - 1:t - 1 + cfg.horizon]
            errors.append(np.abs(pred - target).mean())
            holds.append(np.abs(target - state[-1]).mean())   # 'hold still' baseline
    # far below the untrained error (~0.3 rad) and well below holding the current pose
    assert np.mean(errors) < 0.06, np.mean(errors)
    assert np.mean(errors) < 0.5 * np.mean(holds), (np.mean(errors), np.mean(holds))


def test_resume_continues_from_last_checkpoint(trained, tmp_path, monkeypatch):
    from safetensors.torch import load_file

    from comsim_policy.training import train as train_module

    out = trained / 'ckpt'
    before = {k: v for k, v in load_file(str(out / 'model.safetensors')).items()
              if k.startswith('normalizer.')}

    def refit(*_args, **_kw):
        raise AssertionError('a resumed run refitted its normaliser (it is in the state)')

    monkeypatch.setattr(train_module, 'fit_normalizer', refit)
    # what an interrupted run logs past its last checkpoint (then killed mid-line) is redone
    with (out / 'log.jsonl').open('a') as fh:
        fh.write('{"step": 425, "loss": 9.9}\n{"step": 43')
    main(['--config', str(trained / 'tiny.yaml'), '--data', str(trained / 'eps'),
          '--out', str(out), '--resume', '--max-steps', '450'])
    after = load_file(str(out / 'model.safetensors'))
    assert before and all(torch.equal(v, after[k]) for k, v in before.items())
    steps = [r['step'] for r in _log(trained)]
    assert steps[-1] == 450 and steps.count(400) == 1   # continued, did not restart at 0
    # the training time carries over: the resumed records count on from step 400's
    times = {r['step']: r['train_s'] for r in _log(trained) if 'train_s' in r}
    assert times[400] > 0 and times[450] > times[400]
    assert list(times.values()) == sorted(times.values())
    assert 425 not in steps and steps == sorted(set(steps))
    state = json.loads((out / 'training_state' / 'state.json').read_text())
    assert state['step'] == 450
    assert load_config(out).camera_sizes == {FRONT: [48, 64]}


def test_open_loop_replay_diagnostic(trained, capsys):
    """The open-loop diagnostic feeds native frames as the node does and beats 'hold still'."""
    out = trained / 'open_loop.json'
    assert open_loop.main(['--checkpoint', str(trained / 'ckpt'), '--data',
                           str(trained / 'eps'), '--stride', '3', '--json', str(out)]) == 0
    report = json.loads(out.read_text())
    assert len(report['episodes']) == len(SEEDS)
    for ep in report['episodes'].values():
        assert ep['preprocessing_matches_training']
        assert len(ep['mae_per_row']) == 4 and ep['frames'] == N_FRAMES // 3
    assert report['mean_mae'] < 0.75 * report['mean_hold_mae'], report   # 0.64 measured
    assert 'mean over 2 episodes' in capsys.readouterr().out


def test_the_domain_gap_bench_matches_trajectories_by_name_and_cuts_to_the_reach(trained,
                                                                                  tmp_path):
    """bench/policy_domain_gap.py: one row per checkpoint, one column per look of the same
    trajectories (matched by name, a source without shared names keeps its own), and
    --first-frames predicts only at the episode's first frames."""
    import importlib.util
    import shutil

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location('policy_domain_gap',
                                                  root / 'bench' / 'policy_domain_gap.py')
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    eps = sorted(p for p in (trained / 'eps').iterdir() if p.is_dir())
    look = tmp_path / 'look'
    look.mkdir()
    shutil.copytree(eps[1], look / eps[1].name)         # the second trajectory only
    chosen = bench.chosen_episodes({'a': trained / 'eps', 'b': look}, 5)
    assert [p.name for p in chosen['a']] == [p.name for p in chosen['b']] == [eps[1].name]
    out = tmp_path / 'gap.json'
    assert bench.main(['--checkpoint', f'tiny={trained / "ckpt"}', '--data',
                       f'a={trained / "eps"}', f'b={look}', '--stride', '3',
                       '--first-frames', '7', '--out', str(out)]) == 0
    table = json.loads(out.read_text())['table']['tiny']
    assert table['a']['mae'] == pytest.approx(table['b']['mae'])      # the same frames
    full = open_loop.replay(PolicyRunner.load(trained / 'ckpt', device='cpu'),
                            open_loop.native_episode(eps[1], load_config(trained / 'ckpt')),
                            3, until=7)
    assert full['frames'] == 3                           # frames 0, 3, 6
    assert table['a']['mae'] == pytest.approx(full['mae'])
