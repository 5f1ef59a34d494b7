"""Bags follow their distro: metadata.yaml version and fields as that rosbag2 parses them.

Humble's rosbag2 (metadata version 5) reads `offered_qos_profiles` as YAML text with integer
policies and fails on version 9's list; Jazzy and Kilted write and read version 9. Each bag is
written by the project's writer and read back by the project's reader.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import image_raw, joint_state_raw
from mcap.reader import make_reader

from comsim_core.episodes.distro import bag_format, default_distro
from comsim_core.episodes.reader import Episode
from comsim_core.episodes.topics import TopicSpec
from comsim_core.episodes.writer import EpisodeBagWriter
from comsim_core.errors import UserError
from comsim_teleop.recording import EpisodeRecorder

TOPICS = [TopicSpec('/cameras/front/image_raw', 'sensor_msgs/msg/Image', 30.0),
          TopicSpec('/joint_states', 'sensor_msgs/msg/JointState', 100.0)]
QOS = {'history': 'keep_last', 'depth': 10, 'reliability': 'best_effort',
       'durability': 'volatile', 'deadline': {'sec': 0, 'nsec': 0},
       'lifespan': {'sec': 0, 'nsec': 0}, 'liveliness': 'automatic',
       'liveliness_lease_duration': {'sec': 0, 'nsec': 0},
       'avoid_ros_namespace_conventions': False}
EXPECTED = {'humble': 5, 'jazzy': 9, 'kilted': 9}


def _write(path: Path, storage: str, distro: str | None) -> EpisodeBagWriter:
    w = EpisodeBagWriter(path, TOPICS, storage=storage, distro=distro)
    w.open()
    w.set_offered_qos(TOPICS[0].name, [QOS])
    w.set_custom_data('comsim.metadata', 'task: move_card\n')
    for i in range(5):
        w.write(TOPICS[0].name, image_raw(i * 33_000_000, value=i), i * 33_000_000)
        w.write('/joint_states', joint_state_raw(i * 10_000_000, [0.1 * i] * 7, False),
                i * 10_000_000)
    w.close()
    return w


def _humble_reads(info: dict) -> None:
    """What Humble's metadata_io decodes (version 5): QoS text whose policies are integers."""
    assert info['version'] == 5
    for key in ('storage_identifier', 'duration', 'starting_time', 'message_count',
                'relative_file_paths', 'compression_format', 'compression_mode', 'files'):
        assert key in info, key
    for entry in info['topics_with_message_count']:
        text = entry['topic_metadata']['offered_qos_profiles']
        assert isinstance(text, str)
        for profile in yaml.safe_load(text) or []:
            for policy in ('history', 'reliability', 'durability', 'liveliness'):
                assert isinstance(profile[policy], int), (policy, profile)
        assert 'type_description_hash' not in entry['topic_metadata']


@pytest.mark.parametrize('storage', ['mcap', 'sqlite3'])
@pytest.mark.parametrize('distro', sorted(EXPECTED))
def test_metadata_follows_the_distro(tmp_path, storage, distro):
    bag = tmp_path / 'ep'
    w = _write(bag, storage, distro)
    info = yaml.safe_load((bag / 'metadata.yaml').read_text())['rosbag2_bagfile_information']
    assert info['version'] == EXPECTED[distro]
    assert info['ros_distro'] == distro == w.distro
    assert info['custom_data'] == {'comsim.metadata': 'task: move_card\n'}
    qos = info['topics_with_message_count'][0]['topic_metadata']['offered_qos_profiles']
    if distro == 'humble':
        _humble_reads(info)
        assert yaml.safe_load(qos)[0]['reliability'] == 2  # best effort
    else:
        assert qos == [QOS]
    if storage == 'sqlite3':
        with sqlite3.connect(w.storage_file) as db:
            assert db.execute('SELECT ros_distro FROM schema').fetchone()[0] == distro
            version = db.execute('SELECT metadata_version FROM metadata').fetchone()[0]
            assert version == EXPECTED[distro]
    else:
        with w.storage_file.open('rb') as fh:
            reader = make_reader(fh)
            channel_qos = {c.topic: c.metadata['offered_qos_profiles']
                           for c in reader.get_summary().channels.values()}
            record = next(m for m in reader.iter_metadata() if m.name == 'rosbag2')
        assert record.metadata['ROS_DISTRO'] == distro
        first = yaml.safe_load(channel_qos[TOPICS[0].name])[0]
        assert first['reliability'] == (2 if distro == 'humble' else 'best_effort')
    with Episode.open(bag) as ep:  # the project's reader reads every distro's bags
        js = ep.joint_states('/joint_states')
        np.testing.assert_allclose(js.position[:, 0], [0.0, 0.1, 0.2, 0.3, 0.4])
        images = [img for _, img in ep.images(TOPICS[0].name)]
        assert len(images) == 5 and int(images[3][0, 0, 0]) == 3
        assert ep.connections[0].ext.offered_qos_profiles[0].reliability.name == 'BEST_EFFORT'


@pytest.mark.parametrize(('env', 'expected'), [(None, 'kilted'), ('humble', 'humble'),
                                               ('jazzy', 'jazzy'), ('rolling', 'kilted')])
def test_default_distro_is_ros_distro(tmp_path, monkeypatch, env, expected):
    if env is None:
        monkeypatch.delenv('ROS_DISTRO', raising=False)
    else:
        monkeypatch.setenv('ROS_DISTRO', env)
    assert default_distro() == expected
    w = _write(tmp_path / 'ep', 'mcap', None)
    info = yaml.safe_load((tmp_path / 'ep' / 'metadata.yaml').read_text())
    assert info['rosbag2_bagfile_information']['ros_distro'] == expected
    recorder = EpisodeRecorder(tmp_path / 'out', TOPICS, distro='')
    assert recorder.distro == w.distro == expected


def test_unknown_distro_is_a_user_error():
    with pytest.raises(UserError, match="unknown distro 'iron'.*humble"):
        bag_format('iron')
