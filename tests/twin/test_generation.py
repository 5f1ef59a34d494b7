"""Generation in the twin: success per task, predicates that agree with the physics,
failures labelled or discarded, resumability, read-back with the episode reader."""
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault('MUJOCO_GL', 'egl')
from comsim_core.episodes import PARTIAL_DIR
from comsim_core.episodes.reader import Episode
from comsim_core.tasks.programs import parse_program
from comsim_twin.generation.config import GenerationConfig
from comsim_twin.generation.runner import DISCARDED_DIR, generate
from fixtures.twin_scenes import base_scene

TASKS = ('stack_blocks', 'move_card', 'shake_bottle')
CAMS = ['/cameras/front/image_raw', '/cameras/side/image_raw']
CMD = '/joint_trajectory_controller/joint_trajectory'


@pytest.fixture(scope='module')
def cfg():
    return GenerationConfig.load().with_overrides(image_scale=0.25)


@pytest.fixture(scope='module')
def generated(tmp_path_factory, cfg):
    out = tmp_path_factory.mktemp('gen')
    return out, {t: generate(base_scene(t), t, 3, out / t, seed=7, workers=1, config=cfg,
                             progress=False) for t in TASKS}


def _final(ep_dir: Path) -> tuple[dict, dict]:
    with Episode.open(ep_dir) as ep:
        meta = ep.metadata['metadata']
    return meta['final_object_states'], meta['randomisation']


@pytest.mark.parametrize('task', TASKS)
def test_every_task_succeeds_and_the_predicate_matches_the_physics(generated, task):
    out, reports = generated
    rep = reports[task]
    assert rep.made == 3 and rep.successes == 3, [e.reason for e in rep.episodes]
    for e in rep.episodes:
        states, params = _final(out / task / e.name)
        objs = params['objects']
        if task == 'stack_blocks':
            top, bot = states['block_top']['pos'], states['block_bottom']['pos']
            assert np.hypot(top[0] - bot[0], top[1] - bot[1]) < 0.02
            assert top[2] - bot[2] == pytest.approx(objs['block_top']['size'][2]
                                                    + objs['block_bottom']['size'][2], abs=0.01)
            start = objs['block_top']['pos']
            assert np.hypot(top[0] - start[0], top[1] - start[1]) > 0.05   # it really moved
        elif task == 'move_card':
            zone, half = params['target']['zone_center'], params['target']['zone_half_size']
            card = states['card']['pos']
            assert abs(card[0] - zone[0]) <= half[0] and abs(card[1] - zone[1]) <= half[1]
            start = objs['card']['pos']
            assert np.hypot(card[0] - start[0], card[1] - start[1]) > 0.05
        else:
            pos, quat = states['bottle']['pos'], states['bottle']['quat']
            assert pos[2] == pytest.approx(objs['bottle']['size'][1], abs=0.01)
            assert 1 - 2 * (quat[1] ** 2 + quat[2] ** 2) > np.cos(np.radians(15))


def test_episodes_read_back_like_recordings(generated, cfg):
    out, reports = generated
    ep_dir = out / 'shake_bottle' / reports['shake_bottle'].episodes[0].name
    with Episode.open(ep_dir) as ep:
        meta = ep.metadata
        assert meta['status'] == 'complete' and meta['success'] is True
        assert meta['metadata']['source'] == 'sim'
        assert meta['metadata']['seed'] == reports['shake_bottle'].episodes[0].seed
        assert meta['metadata']['program']['task'] == 'shake_bottle'
        streams = ep.streams
        dur = (streams['/joint_states'].end_ns - streams['/joint_states'].start_ns) / 1e9
        assert streams[CAMS[0]].count == pytest.approx(dur * cfg.camera_hz, abs=2)
        assert streams[CMD].rate_hz == pytest.approx(cfg.control_hz, rel=0.01)
        joints = ep.joint_states()
        assert joints.names == ['joint1', 'joint2', 'joint3', 'joint4', 'joint5', 'joint6',
                                'gripper']
        cmds = ep.commands(CMD)
        frames = list(ep.frames(CAMS, command_topic=CMD))
    assert len(frames) == streams[CAMS[0]].count
    assert frames[0].images[CAMS[0]].shape == (60, 80, 3)       # 320x240 at image_scale 0.25
    assert frames[-1].images[CAMS[1]].std() > 5                 # a rendered scene, not blank
    # the arm followed the commands: joint states track the held command (gripper: the
    # grasped object may stop the fingers, so only the arm joints)
    err = [np.abs(f.joint_position[:6] - f.command[:6]).max() for f in frames
           if f.command is not None]
    assert len(err) > 0.8 * len(frames) and np.median(err) < 0.05
    assert cmds.position.shape[1] == 7 and np.ptp(cmds.position[:, -1]) > 0.03   # open/close


def test_failures_are_labelled_or_discarded(tmp_path, cfg):
    idle = parse_program([{'primitive': 'wait', 'seconds': 0.5}], 'stack_blocks')
    base = base_scene('stack_blocks')
    rep = generate(base, 'stack_blocks', 1, tmp_path / 'label', seed=1, workers=1,
                   config=cfg.with_overrides(failures='label'), program=idle, progress=False)
    assert rep.failures == 1 and rep.successes == 0
    with Episode.open(tmp_path / 'label' / rep.episodes[0].name) as ep:
        assert ep.metadata['success'] is False
        assert 'off the bottom block' in ep.metadata['notes']
    rep = generate(base, 'stack_blocks', 1, tmp_path / 'discard', seed=1, workers=1,
                   config=cfg.with_overrides(failures='discard'), program=idle, progress=False)
    assert rep.discarded == 1
    assert not (tmp_path / 'discard' / rep.episodes[0].name).exists()
    assert (tmp_path / 'discard' / DISCARDED_DIR / rep.episodes[0].name).exists()
    again = generate(base, 'stack_blocks', 1, tmp_path / 'discard', seed=1, workers=1,
                     config=cfg.with_overrides(failures='discard'), program=idle, progress=False)
    assert again.made == 0 and again.skipped == 1


def test_resume_makes_only_what_is_missing(generated, tmp_path, cfg):
    out, reports = generated
    src = out / 'move_card'
    run = tmp_path / 'move_card'
    shutil.copytree(src, run)
    names = [e.name for e in reports['move_card'].episodes]
    shutil.rmtree(run / names[1])
    (run / PARTIAL_DIR / names[1]).mkdir(parents=True)           # an interrupted attempt
    (run / PARTIAL_DIR / names[1] / 'junk.mcap').write_bytes(b'x')
    kept = {n: (run / n / 'episode.yaml').stat().st_mtime_ns for n in (names[0], names[2])}
    rep = generate(base_scene('move_card'), 'move_card', 3, run, seed=7, workers=1, config=cfg,
                   progress=False)
    assert rep.made == 1 and rep.skipped == 2
    assert [e.name for e in rep.episodes if not e.skipped] == [names[1]]
    assert {n: (run / n / 'episode.yaml').stat().st_mtime_ns for n in kept} == kept
    assert not (run / PARTIAL_DIR / names[1]).exists()
    with Episode.open(run / names[1]) as ep:                      # same seed -> same episode
        assert ep.metadata['metadata']['seed'] == reports['move_card'].episodes[1].seed


def test_two_spawned_workers_give_the_same_episodes(generated, tmp_path, cfg):
    out, reports = generated
    rep = generate(base_scene('move_card'), 'move_card', 2, tmp_path, seed=7, workers=2,
                   config=cfg, progress=False)
    assert rep.workers == 2 and rep.made == 2
    for e in rep.episodes:
        a, pa = _final(tmp_path / e.name)
        b, pb = _final(out / 'move_card' / e.name)
        assert pa == pb                                        # same randomisation
        assert np.allclose(a['card']['pos'], b['card']['pos'], atol=1e-4)   # same physics
