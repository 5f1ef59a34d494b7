"""The main job's policy stage: trains real and real + pseudo-real checkpoints per task, rolls
each out in process on the bench lab, and returns training numbers, the success table (with the
paired test) and a picture.

Synthetic episodes at the bench lab's native 240x320 (the policy node refuses a checkpoint
trained on other sizes) and a tiny config keep it to seconds of training.
"""
from __future__ import annotations

import math
import os

import torch
import yaml

from comsim_core.paths import repo_root
from comsim_policy.arms import Arm
from comsim_policy.checkpoint import load_config
from comsim_policy.config import PolicyConfig
from comsim_policy.inference import limit_cpu_threads
from comsim_policy.stage import (
    episode_tasks,
    load_stage_config,
    policy_stage,
    pseudo_real_available,
    single_thread_cpu,
    train_all,
    wave_threads,
)
from fixtures.policy_episodes import FRONT, tiny_config, write_episode

LAB_SIZE = (240, 320)


def test_main_job_config_is_valid_and_small():
    cfg = load_stage_config(None)
    assert cfg.camera_topics == ['/cameras/front/image_raw', '/cameras/side/image_raw']
    assert cfg.image_size[0] <= 72 and cfg.train.max_steps <= 3000
    assert cfg == PolicyConfig.from_yaml(repo_root() / 'config/policy_train_main_job.yaml')


def test_pseudo_real_detection_and_tasks(tmp_path):
    assert not pseudo_real_available(None)
    assert not pseudo_real_available(tmp_path / 'missing')
    (tmp_path / 'empty').mkdir()
    assert not pseudo_real_available(tmp_path / 'empty')
    write_episode(tmp_path / 'eps', 3, n_frames=4, size=(16, 16))
    assert pseudo_real_available(tmp_path / 'eps')
    assert episode_tasks(tmp_path / 'eps') == ['synth3']


def test_single_thread_cpu_restores(monkeypatch):
    monkeypatch.delenv('OMP_NUM_THREADS', raising=False)
    before = torch.get_num_threads()
    with single_thread_cpu():
        assert torch.get_num_threads() == 1 and os.environ['OMP_NUM_THREADS'] == '1'
    assert torch.get_num_threads() == before and 'OMP_NUM_THREADS' not in os.environ
    monkeypatch.setenv('OMP_NUM_THREADS', '2')
    with single_thread_cpu():   # the user's choice wins
        assert torch.get_num_threads() == before


def test_wave_threads_gives_a_last_lone_training_every_core():
    assert wave_threads(4, 2) == [1, 1, 1, 1]
    assert wave_threads(3, 2) == [1, 1, 2]
    assert wave_threads(1, 2) == [2]
    assert wave_threads(5, 4) == [1, 1, 1, 1, 4]
    assert wave_threads(3, 4) == [1, 1, 1]
    assert wave_threads(2, 1) == [1, 1] and wave_threads(0, 2) == []


def test_train_all_runs_the_last_arm_on_every_core(tmp_path, capfd):
    """Three arms on two cores: two worker processes on one thread each, then the third in
    this process on two; every checkpoint trained, in the order of the runs."""
    from comsim_policy.training.data_setup import DataSpec

    real = tmp_path / 'real'
    for seed in (0, 1):
        write_episode(real, seed, n_frames=12, size=(32, 32), task='move_card')
    specs = [DataSpec(p, 'real') for p in sorted(real.iterdir()) if p.is_dir()]
    cfg = tiny_config(cameras=(FRONT,), max_steps=4, val_fraction=0.5, val_every=4,
                      log_every=2)
    cfg.train.cache_dir = str(tmp_path / 'cache')
    runs = [(Arm(f'arm{i}', f'arm {i}', {'real': None}), 'move_card', specs, cfg)
            for i in range(3)]
    lines: list[str] = []
    before = torch.get_num_threads()
    with single_thread_cpu():
        trained = train_all(runs, tmp_path / 'out', lines.append, resume=False, workers=2)
    assert torch.get_num_threads() == before
    assert [t.name for t in trained] == ['arm0', 'arm1', 'arm2']
    assert all((t.path / 'model.safetensors').exists() and t.steps == 4 for t in trained)
    printed = capfd.readouterr().out
    for name in ('arm0', 'arm1'):
        assert f'[policy:{name}:move_card] training on 1 torch thread(s)' in printed
    assert '[policy:arm2:move_card] training on 2 torch thread(s)' in lines


def test_a_resumed_arms_wall_time_counts_its_earlier_training(tmp_path):
    """Resuming a finished arm does no step and leaves its checkpoint's bytes alone, yet its
    wall time (the report's) still counts the training the first run did, as logged in its
    `train_s`."""
    import json
    import time

    from comsim_policy.evaluation.journal import checkpoint_digest
    from comsim_policy.stage import train_policy
    from comsim_policy.training.data_setup import DataSpec

    write_episode(tmp_path / 'real', 0, n_frames=12, size=(32, 32), task='move_card')
    specs = [DataSpec(p, 'real') for p in sorted((tmp_path / 'real').iterdir())]
    cfg = tiny_config(cameras=(FRONT,), max_steps=40, val_fraction=0.0, log_every=20)
    cfg.train.cache_dir = str(tmp_path / 'cache')
    lines: list[str] = []
    with single_thread_cpu():
        first = train_policy('arm', 'move_card', specs, cfg, tmp_path / 'out', lines.append)
        digest = checkpoint_digest(first.path)
        t0 = time.monotonic()
        again = train_policy('arm', 'move_card', specs, cfg, tmp_path / 'out', lines.append,
                             resume=True)
        resume_s = time.monotonic() - t0
    logged = [json.loads(x) for x in (first.path / 'log.jsonl').read_text().splitlines()]
    trained_s = logged[-1]['train_s']
    assert logged[-1]['step'] == 40 and 0 < trained_s <= first.wall_s
    assert again.steps == 40 and any('resumed from' in x for x in lines)
    # the finished checkpoint is left as it was: its rollouts journalled under it stay valid
    assert checkpoint_digest(again.path) == digest
    # the resume trains no step: its own time is the data's; the rest is the first run's
    assert trained_s <= again.wall_s <= trained_s + resume_s
    assert resume_s < trained_s, 'the check above needs a first run longer than the resume'


def test_limit_cpu_threads_respects_omp(monkeypatch):
    before = torch.get_num_threads()
    monkeypatch.setenv('OMP_NUM_THREADS', '3')
    assert limit_cpu_threads() is False and torch.get_num_threads() == before
    monkeypatch.delenv('OMP_NUM_THREADS')
    try:
        assert limit_cpu_threads() is not torch.cuda.is_available()
    finally:
        torch.set_num_threads(before)


def test_stage_end_to_end(tmp_path):
    real, pseudo = tmp_path / 'real', tmp_path / 'pseudo_real'
    for seed in (0, 1):
        write_episode(real, seed, n_frames=20, size=LAB_SIZE, task='move_card')
    write_episode(pseudo, 2, n_frames=20, size=LAB_SIZE, source='pseudo_real', task='move_card')
    cfg = tiny_config(cameras=(FRONT,), max_steps=20, val_fraction=0.5, val_every=20,
                      log_every=10)
    cfg.scheduler.num_inference_steps = 4
    out = tmp_path / 'out'
    lines: list[str] = []
    for seed in (0, 1):   # another task's episodes: left out of move_card's checkpoints
        write_episode(real, 10 + seed, n_frames=20, size=LAB_SIZE)
    res = policy_stage(out, real, pseudo, log=lines.append, rollouts=2, regions=['id'],
                       tasks=['move_card'], config=cfg,
                       evaluation={'workers': 1, 'timeout_factor': 0.2})
    table = {r['checkpoint']: r for r in res.evaluation.table()}
    assert [t.name for t in res.trained] == ['real', 'real_pseudo']
    for trained, sources in zip(res.trained, ({'real': 2}, {'real': 2, 'pseudo_real': 1})):
        ckpt = out / 'policy' / trained.name / 'move_card'
        assert trained.path == ckpt and trained.task == 'move_card'
        assert (ckpt / 'model.safetensors').exists() and (ckpt / 'config.yaml').exists()
        saved = load_config(ckpt)
        assert saved.camera_sizes == {FRONT: list(LAB_SIZE)} and saved.tasks == ['move_card']
        row = table[f'{trained.name}_move_card']
        assert (row['task'], row['region'], row['variant'], row['rollouts']) == \
            ('move_card', 'id', 'default', 2)
        assert row['successes'] in (0, 1, 2)
        assert trained.steps == 20 and trained.samples_per_s > 0 and trained.wall_s >= 0
        for v in (trained.val_loss, trained.val_action_mae, trained.val_image_sensitivity):
            assert v is not None and math.isfinite(v) and v >= 0, trained
        by_name = trained.val_action_mae_by_name     # each joint's error, in its own unit
        assert list(by_name) == cfg.joint_names
        assert math.isclose(sum(by_name.values()) / len(by_name), trained.val_action_mae,
                            rel_tol=1e-4)
        assert trained.episodes['sources'] == sources
    assert res.checkpoints == out / 'policy' and res.cameras == 1
    assert res.rollouts == 2 and res.regions == ['id'] and res.eval_seed == 1000
    paired = res.evaluation.paired()
    assert [(p['a'], p['b'], p['pairs']) for p in paired] == \
        [('real_move_card', 'real_pseudo_move_card', 2)]
    mixed = yaml.safe_load((out / 'policy' / 'real_pseudo' / 'move_card' / 'config.yaml')
                           .read_text())
    assert mixed['train']['mixture'] == {'real': 1.0, 'pseudo_real': 1.0}
    assert sorted(r.checkpoint for r, _ in res.pictures) == ['real_move_card',
                                                             'real_pseudo_move_card']
    for _, png in res.pictures:
        assert png.parent == out / 'pictures' and png.stat().st_size > 1000
    assert any('[policy:eval]' in s for s in lines)
