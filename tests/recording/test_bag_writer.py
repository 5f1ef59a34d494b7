"""EpisodeBagWriter: real bags written and read back with rosbags' AnyReader."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import TS, image_raw, joint_state_raw
from mcap.reader import make_reader
from rosbags.highlevel import AnyReader

from comsim_core.episodes.errors import BagWriterError
from comsim_core.episodes.topics import TopicSpec
from comsim_core.episodes.writer import EpisodeBagWriter, FlushPolicy, should_flush

TOPICS = [TopicSpec('/cam', 'sensor_msgs/msg/Image', 30.0),
          TopicSpec('/joint_states', 'sensor_msgs/msg/JointState', 100.0)]


@pytest.mark.parametrize('storage', ['mcap', 'sqlite3'])
def test_roundtrip_with_custom_data(tmp_path: Path, storage: str) -> None:
    w = EpisodeBagWriter(tmp_path / 'ep', TOPICS, storage=storage)
    w.open()
    w.set_custom_data('comsim.metadata', 'task: pick\n')
    for i in range(20):
        w.write('/cam', image_raw(i * 33_000_000), i * 33_000_000)
        w.write('/joint_states', joint_state_raw(i * 10_000_000, [0.1] * 7, False), i * 10_000_000)
    w.close()
    info = yaml.safe_load((tmp_path / 'ep' / 'metadata.yaml').read_text())
    bag = info['rosbag2_bagfile_information']
    assert bag['version'] == 9 and bag['storage_identifier'] == storage
    assert bag['custom_data'] == {'comsim.metadata': 'task: pick\n'}
    with AnyReader([tmp_path / 'ep'], default_typestore=TS) as r:
        assert r.message_count == 40
        assert {c.topic: c.msgcount for c in r.connections} == {'/cam': 20, '/joint_states': 20}


def test_mcap_chunks_follow_flush_policy(tmp_path: Path) -> None:
    """rosbags alone makes one chunk below 1 MiB; a byte limit closes chunks earlier."""
    sizes = {}
    for name, policy in [('default', FlushPolicy(chunk_bytes=2**30, max_age_s=None)),
                         ('small', FlushPolicy(chunk_bytes=2000, max_age_s=None))]:
        w = EpisodeBagWriter(tmp_path / name, TOPICS, flush_policy=policy)
        w.open()
        for i in range(50):
            w.write('/cam', image_raw(i, h=10, w=10), i)  # ~370 B per message
        w.close()
        with w.storage_file.open('rb') as fh:
            summary = make_reader(fh).get_summary()
            sizes[name] = len(summary.chunk_indexes)
            assert summary.statistics.message_count == 50
    assert sizes['default'] == 1
    assert sizes['small'] >= 8


def test_should_flush_rules() -> None:
    p = FlushPolicy(chunk_bytes=100, max_age_s=1.0)
    assert not should_flush(10**6, None, 0, p)
    assert should_flush(100, 0, 0, p)
    assert not should_flush(99, 0, 999_999_999, p)
    assert should_flush(99, 0, 1_000_000_000, p)
    assert not should_flush(99, 0, 10**12, FlushPolicy(chunk_bytes=100, max_age_s=None))


def test_rejects_unknown_type_storage_and_existing_dir(tmp_path: Path) -> None:
    with pytest.raises(BagWriterError, match='unknown to the kilted typestore'):
        EpisodeBagWriter(tmp_path / 'a', [TopicSpec('/x', 'nope_msgs/msg/Nope')])
    with pytest.raises(BagWriterError, match='unknown storage'):
        EpisodeBagWriter(tmp_path / 'a', TOPICS, storage='rosbag1')
    with pytest.raises(BagWriterError, match='unknown distro'):
        EpisodeBagWriter(tmp_path / 'a', TOPICS, distro='rolling2')
    (tmp_path / 'b').mkdir()
    with pytest.raises(BagWriterError, match='exists'):
        EpisodeBagWriter(tmp_path / 'b', TOPICS).open()


@pytest.mark.parametrize('distro', ['humble', 'jazzy'])
def test_other_distros_write(tmp_path: Path, distro: str) -> None:
    w = EpisodeBagWriter(tmp_path / 'ep', TOPICS[1:], distro=distro)
    w.open()
    w.write('/joint_states', joint_state_raw(1, [0.0], False), 1)
    w.close()
    with AnyReader([tmp_path / 'ep']) as r:
        assert r.message_count == 1
