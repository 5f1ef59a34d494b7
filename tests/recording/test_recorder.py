"""EpisodeRecorder state machine, sidecar, drops, discard/rerecord, close."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import yaml
from conftest import TS, image_raw, joint_state_raw
from rosbags.highlevel import AnyReader

from comsim_core.episodes.topics import TopicSpec
from comsim_teleop.recording import EpisodeRecorder, RecorderError

MS = 1_000_000
TOPICS = [TopicSpec('/cam', 'sensor_msgs/msg/Image', 30.0),
          TopicSpec('/joint_states', 'sensor_msgs/msg/JointState', 100.0)]


def _feed(rec: EpisodeRecorder, n_js: int = 100, t0: int = 10**9) -> None:
    for i in range(n_js):
        rec.on_message('/joint_states', joint_state_raw(t0 + i * 10 * MS, [0.0] * 7),
                       t0 + i * 10 * MS)
        if i % 3 == 0:
            rec.on_message('/cam', image_raw(t0 + i * 10 * MS), t0 + i * 10 * MS)


def test_start_stop_writes_bag_and_sidecar(tmp_path: Path) -> None:
    rec = EpisodeRecorder(tmp_path, TOPICS, min_free_bytes=0)
    meta = {'task': 'Pick up cube', 'operator': 'ann', 'lab_config': 'table: 1\n',
            'calibration': {'fx': 500.0}, 'extra': [1, 2]}
    path = rec.start(meta)
    assert path.name == 'episode_0000_pick_up_cube' and rec.state == 'recording'
    side = yaml.safe_load((path / 'episode.yaml').read_text())
    assert side['status'] == 'recording' and side['metadata'] == meta
    with pytest.raises(RecorderError, match='already recording'):
        rec.start(meta)
    _feed(rec)
    rec.on_message('/not_recorded', b'xx', 0)
    summary = rec.stop(success=True, notes='clean grasp')
    assert rec.state == 'idle'
    js = summary.streams['/joint_states']
    assert js.count == 100 and js.rate_hz == pytest.approx(100.0) and js.gaps == []
    assert summary.streams['/cam'].count == 34 and summary.total_dropped == 0
    assert summary.duration_s == pytest.approx(0.99)
    side = yaml.safe_load((path / 'episode.yaml').read_text())
    assert side['status'] == 'complete' and side['success'] is True
    assert side['notes'] == 'clean grasp'
    assert side['summary']['streams']['/joint_states']['count'] == 100
    assert not (path / '.reserve').exists()
    with AnyReader([path], default_typestore=TS) as r:
        assert r.message_count == 134
    info = yaml.safe_load((path / 'metadata.yaml').read_text())['rosbag2_bagfile_information']
    assert yaml.safe_load(info['custom_data']['comsim.metadata']) == meta
    assert yaml.safe_load(info['custom_data']['comsim.summary'])['status'] == 'complete'
    with pytest.raises(RecorderError, match='not recording'):
        rec.stop(True)
    assert rec.start({'task': 'other'}).name == 'episode_0001_other'


def test_queue_full_counts_drops_and_never_blocks(tmp_path: Path) -> None:
    rec = EpisodeRecorder(tmp_path, TOPICS, queue_size=5, min_free_bytes=0)
    rec.start({'task': 't'})
    gate = threading.Event()
    writer = rec._writer  # noqa: SLF001 - slow the real writer down to fill the queue
    orig = writer.write
    writer.write = lambda *a: (gate.wait(), orig(*a))  # type: ignore[method-assign]
    t0 = time.monotonic()
    for i in range(50):
        rec.on_message('/joint_states', joint_state_raw(i * 10 * MS, [0.0]), i * 10 * MS)
    assert time.monotonic() - t0 < 1.0
    st = rec.status()
    assert st.dropped['/joint_states'] >= 44 and st.queue_depth == 5
    assert any('dropped (writer queue full)' in w for w in rec.rate_warnings(0))
    gate.set()
    s = rec.stop(True)
    js = s.streams['/joint_states']
    assert js.count + js.dropped == 50 and js.count >= 5
    side = yaml.safe_load((Path(s.path) / 'episode.yaml').read_text())
    assert side['summary']['streams']['/joint_states']['dropped'] == js.dropped


def test_discard_and_rerecord(tmp_path: Path) -> None:
    rec = EpisodeRecorder(tmp_path, TOPICS, min_free_bytes=0)
    first = rec.start({'task': 'a'})
    _feed(rec, 10)
    assert rec.discard() == first and not first.exists() and rec.state == 'idle'
    p1 = rec.start({'task': 'a', 'operator': 'bob'})
    _feed(rec, 10)
    rec.stop(False)
    p2 = rec.rerecord()  # idle: discards the last finished episode, starts again
    assert p2 == p1 and rec.state == 'recording'  # the freed number is reused
    side = yaml.safe_load((p2 / 'episode.yaml').read_text())
    assert side['status'] == 'recording' and side['metadata']['operator'] == 'bob'
    p3 = rec.rerecord()  # recording: discards the running one
    assert p3 == p1
    s = rec.stop(True)
    assert s.streams['/joint_states'].count == 0
    assert [p.name for p in tmp_path.iterdir()] == [p3.name]


def test_close_marks_interrupted(tmp_path: Path) -> None:
    rec = EpisodeRecorder(tmp_path, TOPICS, min_free_bytes=0)
    path = rec.start({'task': 'a'})
    _feed(rec, 20)
    s = rec.close()
    assert s is not None and s.status == 'interrupted'
    assert yaml.safe_load((path / 'episode.yaml').read_text())['status'] == 'interrupted'
    assert rec.close() is None
    with AnyReader([path], default_typestore=TS) as r:
        assert r.message_count == 27


def test_min_free_bytes_refuses_start(tmp_path: Path) -> None:
    rec = EpisodeRecorder(tmp_path, TOPICS, min_free_bytes=1 << 62)
    with pytest.raises(RecorderError, match='not enough free disk space'):
        rec.start({'task': 'a'})
    assert rec.state == 'idle' and list(tmp_path.iterdir()) == []


def test_live_rate_warnings(tmp_path: Path) -> None:
    rec = EpisodeRecorder(tmp_path, TOPICS, min_free_bytes=0)
    rec.start({'task': 'a'})
    t0 = 5 * 10**9
    for i in range(200):  # joint states at 100 Hz for 2 s, camera only 10 Hz
        t = t0 + i * 10 * MS
        rec.on_message('/joint_states', joint_state_raw(t, [0.0]), t)
        if i % 10 == 0:
            rec.on_message('/cam', image_raw(t), t)
    warnings = rec.rate_warnings(t0 + 1990 * MS)
    assert len(warnings) == 1 and warnings[0].startswith('/cam: 10.0 Hz')
    rec.stop(True)
    assert rec.rate_warnings(t0) == []


def test_latched_messages_start_every_episode(tmp_path: Path) -> None:
    """A transient-local topic sent once before any episode (robot_description, tf_static) is
    in every bag, stamped at the episode's start; a newer message replaces it."""
    desc = TopicSpec('/robot_description', 'std_msgs/msg/String', None)
    rec = EpisodeRecorder(tmp_path, [*TOPICS, desc], min_free_bytes=0)
    rec.set_latched('/robot_description', keep=1)

    def urdf(text: str) -> bytes:
        return TS.serialize_cdr(TS.types['std_msgs/msg/String'](data=text),
                                'std_msgs/msg/String')

    rec.on_message('/robot_description', urdf('<robot name="old"/>'), 5 * MS)
    rec.on_message('/robot_description', urdf('<robot name="arm"/>'), 6 * MS)  # while idle
    paths = []
    for k in range(2):
        t0 = (10 + 5 * k) * 10**9
        paths.append(rec.start({'task': 'latched'}, t_ns=t0))
        _feed(rec, 10, t0 + MS)
        summary = rec.stop(success=True)
        assert summary.streams['/robot_description'].count == 1
        assert summary.streams['/robot_description'].first_ns == t0
    for path in paths:
        with AnyReader([path], default_typestore=TS) as r:
            conns = [c for c in r.connections if c.topic == '/robot_description']
            msgs = [r.deserialize(raw, c.msgtype).data
                    for c, _, raw in r.messages(connections=conns)]
        assert msgs == ['<robot name="arm"/>']
