"""Episode reader on real recorded bags."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import TS, image_raw, joint_state_raw, trajectory_raw

from comsim_core.episodes import (
    AlignmentError,
    CorruptEpisodeError,
    Episode,
    EpisodeNotFoundError,
    MissingTopicError,
    WrongEncodingError,
)
from comsim_core.episodes.align import merge_trajectories
from comsim_core.episodes.reader import JOINT_STATE
from comsim_core.episodes.topics import TopicSpec
from comsim_core.episodes.writer import EpisodeBagWriter
from comsim_teleop.recording import EpisodeRecorder

MS = 1_000_000
T0 = 100 * 10**9
LAG = 3 * MS  # log time lags the publisher's stamp


def _record(out: Path, storage: str = 'mcap', cam2_offset_ms: int = 5, hole: bool = False) -> Path:
    topics = [TopicSpec('/cam', 'sensor_msgs/msg/Image', 10.0),
              TopicSpec('/cam2', 'sensor_msgs/msg/Image', 10.0),
              TopicSpec('/joint_states', 'sensor_msgs/msg/JointState', 100.0),
              TopicSpec('/cmd_traj', 'trajectory_msgs/msg/JointTrajectory'),
              TopicSpec('/cmd_array', 'std_msgs/msg/Float64MultiArray')]
    rec = EpisodeRecorder(out, topics, storage=storage, min_free_bytes=0)
    path = rec.start({'task': 'reach', 'operator': 'ann'})
    from conftest import TS  # noqa: PLC0415
    for i in range(101):  # 1 s of joint states at 100 Hz, position = time in s
        t = T0 + i * 10 * MS
        if not (hole and 40 <= i < 60):
            rec.on_message('/joint_states', joint_state_raw(t, [i / 100] * 7), t + LAG)
        if i % 10 == 0 and i < 100:
            rec.on_message('/cam', image_raw(t, value=i), t + LAG)
            t2 = t + cam2_offset_ms * MS
            rec.on_message('/cam2', image_raw(t2, value=i + 1, encoding='bgr8'), t2 + LAG)
        if i % 25 == 0:  # a 2-point trajectory every 250 ms: +0.1 s and +0.2 s
            rec.on_message('/cmd_traj', trajectory_raw(t, [(0.1, [i] * 7), (0.2, [i + 1] * 7)]),
                           t + LAG)
            arr = TS.types['std_msgs/msg/Float64MultiArray'](
                layout=TS.types['std_msgs/msg/MultiArrayLayout'](dim=[], data_offset=0),
                data=np.full(7, float(i)))
            rec.on_message('/cmd_array', bytes(TS.serialize_cdr(
                arr, 'std_msgs/msg/Float64MultiArray')), t + LAG)
    rec.stop(True)
    return path


@pytest.fixture(scope='module')
def episode_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _record(tmp_path_factory.mktemp('eps'))


def test_metadata_and_streams(episode_dir: Path) -> None:
    with Episode.open(episode_dir) as ep:
        assert ep.metadata['metadata']['task'] == 'reach'
        assert ep.metadata['status'] == 'complete'
        assert 'comsim.metadata' in ep.metadata['bag_custom_data']
        s = ep.streams
        assert s['/joint_states'].count == 101 and s['/cam'].count == 10
        assert s['/joint_states'].msgtype == 'sensor_msgs/msg/JointState'
        assert s['/joint_states'].rate_hz == pytest.approx(100.0)
        assert s['/cam'].start_ns == T0 + LAG


def test_joint_states_from_rclpy_bytes(episode_dir: Path) -> None:
    with Episode.open(episode_dir) as ep:
        js = ep.joint_states()
    assert js.names[0] == 'joint1' and len(js.names) == 7
    assert js.position.shape == (101, 7) and np.isnan(js.velocity).all()
    assert js.t_ns[0] == T0  # header stamp, not log time
    np.testing.assert_allclose(js.position[:, 0], np.arange(101) / 100)


def test_joint_states_decoded_at_once_equal_one_by_one(episode_dir: Path, monkeypatch) -> None:
    with Episode.open(episode_dir) as ep:
        at_once = ep.joint_states()
        monkeypatch.setattr('comsim_core.episodes.reader.joint_states_from_cdr',
                            lambda raws: None)
        one_by_one = ep.joint_states()
    assert at_once.names == one_by_one.names
    for field in ('t_ns', 'position', 'velocity', 'effort'):
        np.testing.assert_array_equal(getattr(at_once, field), getattr(one_by_one, field))


def test_joint_states_with_nan_efforts_are_decoded_at_once(tmp_path: Path) -> None:
    """ros2_control publishes NaN efforts; they must not send every read one by one."""
    writer = EpisodeBagWriter(tmp_path / 'ep', [TopicSpec('/joint_states', JOINT_STATE)])
    writer.open()
    for i in range(5):
        msg = TS.types[JOINT_STATE](
            header=TS.types['std_msgs/msg/Header'](
                stamp=TS.types['builtin_interfaces/msg/Time'](sec=1, nanosec=i * 1000),
                frame_id=''),
            name=['a', 'b'], position=np.array([i, -i], float), velocity=np.zeros(0),
            effort=np.array([np.nan, 1.0]))
        writer.write('/joint_states', bytes(TS.serialize_cdr(msg, JOINT_STATE)), 10**9 + i)
    writer.close()
    with Episode.open(tmp_path / 'ep') as ep:
        raws = [raw for _, _, _, raw in ep.raw_messages(['/joint_states'])]
        assert ep._joint_states_at_once('/joint_states', [0] * len(raws), raws) is not None
        js = ep.joint_states()
    assert np.isnan(js.effort[:, 0]).all() and (js.effort[:, 1] == 1.0).all()
    assert np.isnan(js.velocity).all()
    np.testing.assert_array_equal(js.position[:, 0], np.arange(5))


def test_images_use_header_stamp(episode_dir: Path) -> None:
    with Episode.open(episode_dir) as ep:
        imgs = list(ep.images('/cam'))
        imgs2 = list(ep.images('/cam2'))
        with pytest.raises(WrongEncodingError, match='not an image topic'):
            next(ep.images('/joint_states'))
    assert len(imgs) == 10 and imgs[3][0] == T0 + 300 * MS
    assert imgs[3][1].shape == (6, 8, 3) and imgs[3][1][0, 0].tolist() == [30, 31, 32]
    assert imgs2[3][1][0, 0].tolist() == [31, 32, 33]  # bgr8 converted


def test_commands_trajectory_and_array(episode_dir: Path) -> None:
    with Episode.open(episode_dir) as ep:
        traj = ep.commands('/cmd_traj')
        arr = ep.commands('/cmd_array')
    # 5 trajectories of 2 points, none overlapping the next one's start
    assert traj.t_ns.size == 10 and traj.names[0] == 'joint1'
    # goal in force: point 0 from the trajectory's start, point 1 once point 0 is due
    assert traj.t_ns[0] == T0 and traj.position[0, 0] == 0
    assert traj.t_ns[1] == T0 + 100 * MS and traj.position[1, 0] == 1
    assert arr.names is None and arr.t_ns[0] == T0 + LAG and arr.position.shape == (5, 7)


def test_merge_trajectories_replaces_future_points() -> None:
    t, v = merge_trajectories([(0, np.array([10, 20, 30]), np.array([[1.0], [2.0], [3.0]])),
                               (15, np.array([25]), np.array([[9.0]]))])
    # goals: 1 from 0, 2 from 10; the second trajectory replaces the rest from 15 on
    assert t.tolist() == [0, 10, 15] and v[:, 0].tolist() == [1.0, 2.0, 9.0]
    # points already due when a trajectory starts are skipped
    t, v = merge_trajectories([(150, np.array([100, 200, 300]), np.array([[1.], [2.], [3.]]))])
    assert t.tolist() == [150, 200] and v[:, 0].tolist() == [2.0, 3.0]


def test_frames_align_cameras_joints_commands(episode_dir: Path) -> None:
    with Episode.open(episode_dir) as ep:
        frames = list(ep.frames(['/cam', '/cam2'], command_topic='/cmd_traj'))
    assert len(frames) == 10
    f = frames[3]
    assert f.t_ns == T0 + 300 * MS and set(f.images) == {'/cam', '/cam2'}
    assert f.image_t_ns['/cam2'] == f.t_ns + 5 * MS
    np.testing.assert_allclose(f.joint_position, np.full(7, 0.3))
    # at 300 ms the t=250 ms trajectory is heading for its first point (value 25)
    assert f.command is not None and f.command[0] == 25.0
    assert frames[0].command[0] == 0.0  # the t=0 trajectory's first goal, from its start


def test_frames_alignment_errors_and_skip(tmp_path: Path) -> None:
    path = _record(tmp_path, cam2_offset_ms=30, hole=True)
    with Episode.open(path) as ep:
        with pytest.raises(AlignmentError) as err:
            list(ep.frames(['/cam', '/cam2'], tolerance_s=0.02))
        assert err.value.gap_s == pytest.approx(0.03)
        stream = ep.frames(['/cam'], skip_unaligned=True, tolerance_s=0.015)
        frames = list(stream)
    # joint-state hole 400..590 ms: frames at 400 and 500 ms are not bracketed
    assert len(frames) == 8 and stream.skipped == 2
    assert 'do not bracket' in stream.skip_reasons[0]


def test_sqlite3_episode_reads_the_same(tmp_path: Path) -> None:
    path = _record(tmp_path, storage='sqlite3')
    with Episode.open(path) as ep:
        assert ep.joint_states().position.shape == (101, 7)
        assert len(list(ep.frames(['/cam', '/cam2']))) == 10


def test_open_errors(tmp_path: Path, episode_dir: Path) -> None:
    with pytest.raises(EpisodeNotFoundError):
        Episode.open(tmp_path / 'nope')
    with pytest.raises(EpisodeNotFoundError, match='no rosbag2'):
        Episode.open(tmp_path)
    with Episode.open(episode_dir) as ep, pytest.raises(MissingTopicError, match="'/cam2'"):
        ep.messages('/wrong')
    broken = tmp_path / 'broken'
    broken.mkdir()
    data = next(episode_dir.glob('*.mcap')).read_bytes()
    (broken / 'broken.mcap').write_bytes(data[: len(data) // 2])
    with pytest.raises(CorruptEpisodeError, match='comsim-recover'):
        Episode.open(broken)
    meta = yaml.safe_load((episode_dir / 'metadata.yaml').read_text())
    meta['rosbag2_bagfile_information']['relative_file_paths'] = ['broken.mcap']
    meta['rosbag2_bagfile_information']['files'][0]['path'] = 'broken.mcap'
    (broken / 'metadata.yaml').write_text(yaml.safe_dump(meta))
    with pytest.raises(CorruptEpisodeError, match='comsim-recover'):
        with Episode.open(broken) as ep:
            ep.joint_states()


def test_missing_joint_states_is_a_user_error_naming_episode_topic_and_topics(
        tmp_path: Path) -> None:
    """An episode recorded without /joint_states: one line for the user, not a traceback."""
    from comsim_core.errors import UserError, user_message  # noqa: PLC0415

    w = EpisodeBagWriter(tmp_path / 'ep', [TopicSpec('/cam', 'sensor_msgs/msg/Image', 10.0)])
    w.open()
    w.write('/cam', image_raw(1), 1)
    w.close()
    with Episode.open(tmp_path / 'ep') as ep, pytest.raises(UserError) as err:
        ep.joint_states()
    assert isinstance(err.value, MissingTopicError)
    message = user_message(err.value)
    assert message == (f"{tmp_path / 'ep'}: topic '/joint_states' not in episode; "
                       "topics found: ['/cam']")


def _merge_reference(segments):
    """merge_trajectories as first written: every trajectory cuts every earlier one."""
    times, vals = [], []
    for base, pt, pos in segments:
        pt, pos = np.asarray(pt, dtype=np.int64), np.asarray(pos, dtype=np.float64)
        cut = [t < base for t in times]
        times = [t[c] for t, c in zip(times, cut)]
        vals = [v[c] for v, c in zip(vals, cut)]
        if pt.size == 0:
            continue
        ahead = np.flatnonzero(pt > base)
        if ahead.size == 0:
            starts, goals = np.array([base], dtype=np.int64), pos[-1:]
        else:
            starts = np.concatenate([[base], pt[ahead[0]:-1]]).astype(np.int64)
            goals = pos[ahead[0]:]
        times.append(starts)
        vals.append(goals)
    t_all = np.concatenate(times)
    order = np.argsort(t_all, kind='stable')
    return t_all[order], np.concatenate(vals)[order]


@pytest.mark.parametrize('seed', range(40))
def test_merge_trajectories_equals_the_cut_everything_reference(seed) -> None:
    """Look-ahead streams (in order, overlapping, some late or empty) merge as the reference."""
    rng = np.random.default_rng(seed)
    segments, base = [], 0
    for _ in range(int(rng.integers(1, 120))):
        base += int(rng.integers(-30, 60)) if seed % 2 else int(rng.integers(0, 60))
        n = int(rng.integers(0, 8))
        pt = base + np.sort(rng.integers(-20, 400, n))
        segments.append((base, pt, rng.normal(size=(n, 2))))
    if not any(len(s[1]) for s in segments):
        segments.append((base, np.array([base + 5]), np.zeros((1, 2))))
    t, v = merge_trajectories(segments)
    t_ref, v_ref = _merge_reference(segments)
    np.testing.assert_array_equal(t, t_ref)
    np.testing.assert_array_equal(v, v_ref)
