"""Replay of a recorded bench-lab episode in the MuJoCo twin -> paired episode, gap report."""
from __future__ import annotations

import numpy as np
import pytest

from comsim_core.episodes import Episode
from comsim_core.episodes.paired import (
    SIM_JOINT_STATES,
    appearance_variant_name,
    real_image_topic,
    sim_image_topic,
    sim_objects_topic,
    variant_source,
)
from comsim_core.episodes.sidecar import read_sidecar
from comsim_core.episodes.topics import TopicSpec
from comsim_core.episodes.writer import EpisodeBagWriter
from comsim_twin.backends import make_backend
from comsim_twin.generation.config import GenerationConfig
from comsim_twin.replay import (
    EpisodeReplay,
    ReplayError,
    gap_report,
    is_complete_paired,
    replay_episode,
    side_by_side,
)
from comsim_twin.stage import replay_variants
from fixtures.bench_lab_episodes import TRAJ_TOPIC, record_episode
from fixtures.cdr import joint_state_cdr


@pytest.fixture(scope='module')
def recorded(tmp_path_factory):
    """(episode dir, twin scene from truth, lab ground truth): a move_card expert episode."""
    return record_episode(tmp_path_factory.mktemp('real'), 'move_card', seed=0)


@pytest.fixture(scope='module')
def backend():
    b = make_backend('mujoco')
    yield b
    b.close()


@pytest.fixture(scope='module')
def replays(recorded, backend, tmp_path_factory):
    """mode -> (paired episode dir, twin object states at the end of the replay)."""
    path, scene, _ = recorded
    out = tmp_path_factory.mktemp('paired')
    result = {}
    for mode in ('kinematic', 'dynamic'):   # dynamic with the object masks
        paired = replay_episode(path, scene, backend, mode, out,
                                object_masks=mode == 'dynamic')
        result[mode] = (paired, backend.object_states())
    return result


@pytest.mark.parametrize('mode', ['kinematic', 'dynamic'])
def test_paired_episode_has_both_streams_on_the_real_time_base(recorded, replays, mode):
    source, scene, _ = recorded
    paired, _ = replays[mode]
    assert is_complete_paired(paired)
    side = read_sidecar(paired)
    assert side['mode'] == mode and side['source_episode'] == str(source.resolve())
    assert side['twin_scene']['cameras'].keys() == scene.cameras.keys()
    assert side['task'] == 'move_card' and side['source_metadata']['seed'] == 0   # the recording's
    with Episode.open(source) as src, Episode.open(paired) as ep:
        for topic in ('/joint_states', TRAJ_TOPIC):
            assert ep.streams[topic].count == src.streams[topic].count > 0
        for cam in scene.cameras:
            real = list(ep.images(real_image_topic(cam)))
            sim = list(ep.images(sim_image_topic(cam)))
            recorded_imgs = list(src.images(f'/cameras/{cam}/image_raw'))
            assert len(real) == len(sim) == len(recorded_imgs) > 10
            assert [t for t, _ in real] == [t for t, _ in sim] == [t for t, _ in recorded_imgs]
            for (_, a), (_, b) in zip(real, recorded_imgs):
                np.testing.assert_array_equal(a, b)       # copied as recorded
            assert sim[0][1].shape == real[0][1].shape
            assert not np.array_equal(sim[0][1], sim[-1][1])   # the twin moved
        js, sim_js = ep.joint_states('/joint_states'), ep.joint_states(SIM_JOINT_STATES)
        np.testing.assert_array_equal(js.t_ns, sim_js.t_ns)
        assert sim_js.names == js.names


def test_object_masks_lie_beside_the_renders_and_show_the_card(recorded, replays, backend):
    """Each render's object ids, same stamps; where they show the card the render has the
    card's colour, and the arm pushing it hides part of it in some frames."""
    _, scene, _ = recorded
    with Episode.open(replays['kinematic'][0]) as ep:
        assert sim_objects_topic('front') not in ep.topics          # only when asked for
    paired = replays['dynamic'][0]
    assert read_sidecar(paired)['objects'] == backend.object_names == ['card']
    with Episode.open(paired) as ep:
        for cam in scene.cameras:
            sim = list(ep.images(sim_image_topic(cam)))
            objs = list(ep.images(sim_objects_topic(cam)))
            assert [t for t, _ in objs] == [t for t, _ in sim]
            ids = np.stack([o[..., 0] for _, o in objs])     # mono8 decodes to three channels
            assert set(np.unique(ids)) <= {0, 1}
            area = (ids == 1).sum(axis=(1, 2))
            assert (area > 20).mean() > 0.9 and area.max() > area.min()
            img, card = sim[0][1], ids[0] == 1
            colour = np.median(img[card].astype(float), axis=0)
            table = np.median(img[~card].astype(float), axis=0)
            assert np.abs(colour - table).max() > 30              # the pixels are the card's


def test_kinematic_replay_follows_the_recorded_joints(replays):
    with Episode.open(replays['kinematic'][0]) as ep:
        js, sim = ep.joint_states('/joint_states'), ep.joint_states(SIM_JOINT_STATES)
    err = np.abs(sim.position - js.position)
    assert err[:, :6].max() < 0.01          # rad
    assert err[:, 6].max() < 0.005          # gripper, m
    assert np.ptp(js.position[:, :6], axis=0).max() > 0.3   # the arm really moved


def test_dynamic_replay_tracks_the_recorded_motion_through_physics(replays):
    with Episode.open(replays['dynamic'][0]) as ep:
        js, sim = ep.joint_states('/joint_states'), ep.joint_states(SIM_JOINT_STATES)
    err = np.abs(sim.position[:, :6] - js.position[:, :6])
    assert np.median(err) < 0.02
    assert err.max() < 0.15
    # Driven, not placed: the twin lags the commands a little, so it is not an exact copy.
    assert err.max() > 1e-4


def test_dynamic_targets_kept_between_commands_change_nothing(recorded, backend, monkeypatch):
    """The follower's targets are computed for a block of steps and reused until the next
    command; per-call targets must give the same motion, bit for bit."""
    path, scene, _ = recorded

    def sim_joints():
        backend.build(scene)
        with Episode.open(path) as ep:
            replay = EpisodeReplay(ep, scene, backend, 'dynamic')
            return np.array([ev.sim_q for ev in replay.events() if ev.kind == 'joints'])
    blocked = sim_joints()
    monkeypatch.setattr(EpisodeReplay, 'TARGET_BLOCK', 1)
    np.testing.assert_array_equal(sim_joints(), blocked)
    assert np.ptp(blocked[:, :6], axis=0).max() > 0.3


@pytest.mark.parametrize('mode', ['kinematic', 'dynamic'])
def test_twin_card_is_pushed_like_the_real_one(recorded, replays, mode):
    _, _, truth = recorded
    start = np.array(truth['objects_start']['card']['pos'][:2])
    real_end = np.array(truth['objects_end']['card']['pos'][:2])
    twin_end = replays[mode][1]['card']['pos'][:2]
    real_move, twin_move = real_end - start, twin_end - start
    assert np.linalg.norm(real_move) > 0.05
    assert np.linalg.norm(twin_move) > 0.05
    cos = real_move @ twin_move / np.linalg.norm(real_move) / np.linalg.norm(twin_move)
    assert cos > 0.8
    # Same push, same end: the twin knows the card's true size and pose here (kinematic was
    # 4.5 cm off before the arm's placed velocity was made immune to gravity and damping).
    assert np.linalg.norm(twin_end - real_end) < 0.02


def test_gap_report_and_side_by_side(recorded, replays):
    _, scene, _ = recorded
    paired = replays['kinematic'][0]
    report = gap_report(paired)
    assert report['cameras'].keys() == scene.cameras.keys()
    for cam, g in report['cameras'].items():
        assert g['frames'] > 10
        assert np.isfinite(g['psnr_mean']) and g['psnr_min'] <= g['psnr_mean']
        assert 0.0 < g['ssim_min'] <= g['ssim_mean'] <= 1.0
    picture = side_by_side(paired, 3)
    cam = scene.cameras['front']
    assert picture.shape[0] >= 3 * len(scene.cameras) * cam.height
    assert picture.shape[1] == 3 * cam.width + 4


def test_replaying_into_an_existing_output_is_refused(recorded, replays, backend):
    path, scene, _ = recorded
    out = replays['kinematic'][0].parent
    with pytest.raises(FileExistsError, match='exists'):
        replay_episode(path, scene, backend, 'kinematic', out)


# -- bad inputs ----------------------------------------------------------------------------
def _small_bag(path, names, cameras=('front', 'side'), joints=True):
    topics = ([TopicSpec('/joint_states', 'sensor_msgs/msg/JointState')] if joints else []) + \
             [TopicSpec(f'/cameras/{c}/image_raw', 'sensor_msgs/msg/Image') for c in cameras]
    w = EpisodeBagWriter(path, topics)
    w.open()
    if joints:
        for i in range(3):
            w.write('/joint_states', joint_state_cdr(i * 10**7, names, np.zeros(len(names))),
                    i * 10**7)
    w.close()
    return path


def test_missing_joint_states_topic_is_named(recorded, backend, tmp_path):
    _, scene, _ = recorded
    bag = _small_bag(tmp_path / 'bag', [], joints=False)
    with pytest.raises(ReplayError, match="lacks topic '/joint_states'"):
        replay_episode(bag, scene, backend, 'kinematic', tmp_path / 'out')
    assert not (tmp_path / 'out').exists()   # nothing half-written


def test_joint_name_mismatch_lists_both(recorded, backend, tmp_path):
    _, scene, _ = recorded
    bag = _small_bag(tmp_path / 'bag', ['shoulder', 'elbow', 'wrist'])
    with pytest.raises(ReplayError) as exc:
        replay_episode(bag, scene, backend, 'kinematic', tmp_path / 'out')
    assert "['shoulder', 'elbow', 'wrist']" in str(exc.value)
    assert "'joint1'" in str(exc.value) and "'gripper'" in str(exc.value)


def test_camera_without_image_topic_is_named(recorded, backend, tmp_path):
    _, scene, _ = recorded
    names = ['joint1', 'joint2', 'joint3', 'joint4', 'joint5', 'joint6', 'gripper']
    bag = _small_bag(tmp_path / 'bag', names, cameras=('front',))
    with pytest.raises(ReplayError, match=r"camera 'side'.*'/cameras/side/image_raw'"):
        replay_episode(bag, scene, backend, 'kinematic', tmp_path / 'out')


def test_dynamic_replay_without_commands_names_the_command_topics(recorded, backend, tmp_path):
    _, scene, _ = recorded
    names = ['joint1', 'joint2', 'joint3', 'joint4', 'joint5', 'joint6', 'gripper']
    bag = _small_bag(tmp_path / 'bag', names)
    with pytest.raises(ReplayError, match='/joint_trajectory_controller/joint_trajectory'):
        replay_episode(bag, scene, backend, 'dynamic', tmp_path / 'out')
    with pytest.raises(ReplayError, match='mode'):
        replay_episode(bag, scene, backend, 'teleport', tmp_path / 'out')


def test_appearance_variants_replay_the_same_real_episode_in_other_looks(recorded, replays,
                                                                        backend, tmp_path):
    """Extra pairs for the neural simulator: the recorded footage the same, the twin's render
    of each variant another look of the same motion, named and kept for a rerun."""
    path, scene, _ = recorded
    base_pair = replays['kinematic'][0]
    cfg = GenerationConfig.load()
    made = replay_variants(path, scene, backend, tmp_path, 2, cfg, seed=7, mode='kinematic')
    assert [p.name for p in made] == [appearance_variant_name(base_pair.name, k) for k in (1, 2)]
    assert all(is_complete_paired(p) and variant_source(p.name) == base_pair.name for p in made)
    looks = [read_sidecar(p)['appearance_variant'] for p in made]
    assert [v['index'] for v in looks] == [1, 2] and looks[0] != looks[1]
    assert read_sidecar(base_pair)['appearance_variant'] is None
    topic_real, topic_sim = real_image_topic('front'), sim_image_topic('front')
    with Episode.open(base_pair) as b, Episode.open(made[0]) as v:
        real_b, real_v = list(b.images(topic_real)), list(v.images(topic_real))
        sim_b, sim_v = list(b.images(topic_sim)), list(v.images(topic_sim))
    assert len(real_v) == len(real_b) > 10
    for (tb, ib), (tv, iv) in zip(real_b, real_v):
        assert tb == tv
        np.testing.assert_array_equal(ib, iv)                 # the same lab footage
    diff = [np.abs(a[1].astype(int) - c[1].astype(int)).mean() for a, c in zip(sim_b, sim_v)]
    assert min(diff) > 2.0                                    # another look in every frame
    mtime = made[0].stat().st_mtime_ns
    assert replay_variants(path, scene, backend, tmp_path, 2, cfg, seed=7,
                           mode='kinematic') == made          # kept, not replayed again
    assert made[0].stat().st_mtime_ns == mtime
