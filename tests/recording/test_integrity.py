"""Recorded bags keep and label their data honestly: CRCs, QoS, salvage, refusal to guess.

Real MCAP files written by ``EpisodeBagWriter``, damaged on disk the way crashes and bad disks
do it, and read back with rosbags, the ``mcap`` package and our episode reader.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import TS, joint_state_raw
from mcap.reader import make_reader
from mcap.records import Chunk, DataEnd
from mcap.stream_reader import StreamReader
from rosbags.highlevel import AnyReader

from comsim_core.episodes import CorruptEpisodeError, Episode
from comsim_core.episodes.topics import TopicSpec
from comsim_core.episodes.writer import EpisodeBagWriter, FlushPolicy
from comsim_teleop.recording.recover import recover_episode
from comsim_teleop.recording.recover_cli import main as recover_main

TOPICS = [TopicSpec('/cam', 'sensor_msgs/msg/Image', 30.0),
          TopicSpec('/joint_states', 'sensor_msgs/msg/JointState', 200.0)]
MS = 1_000_000
QOS = {'history': 'unknown', 'depth': 0, 'reliability': 'best_effort', 'durability': 'volatile',
       'deadline': {'sec': 9223372036, 'nsec': 854775807},
       'lifespan': {'sec': 9223372036, 'nsec': 854775807}, 'liveliness': 'automatic',
       'liveliness_lease_duration': {'sec': 9223372036, 'nsec': 854775807},
       'avoid_ros_namespace_conventions': False}


def textured_image(t_ns: int, i: int, h: int = 120, w: int = 160) -> tuple[bytes, np.ndarray]:
    """An rgb8 image with no zero bytes (zeroed bytes on disk must change it) and its pixels."""
    px = (np.arange(h * w * 3, dtype=np.int64).reshape(h, w, 3) * 7 + i) % 251 + 1
    px = px.astype(np.uint8)
    T = TS.types['builtin_interfaces/msg/Time']
    hdr = TS.types['std_msgs/msg/Header'](stamp=T(sec=t_ns // 10**9, nanosec=t_ns % 10**9),
                                          frame_id='cam')
    msg = TS.types['sensor_msgs/msg/Image'](header=hdr, height=h, width=w, encoding='rgb8',
                                            is_bigendian=0, step=w * 3, data=px.reshape(-1))
    return bytes(TS.serialize_cdr(msg, 'sensor_msgs/msg/Image')), px


def write_bag(path: Path, seconds: float = 6.0, chunk_bytes: int = 1_000_000
              ) -> dict[int, np.ndarray]:
    """joint states at 200 Hz (rclpy bytes) and images at 30 Hz; returns pixels by stamp."""
    w = EpisodeBagWriter(path, TOPICS, flush_policy=FlushPolicy(chunk_bytes=chunk_bytes,
                                                                max_age_s=None))
    w.open()
    pixels = {}
    for k in range(int(seconds * 200)):
        t = 10**9 + k * 5 * MS
        w.write('/joint_states', joint_state_raw(t, [k / 1000] * 7), t)
        if k % 7 == 0:
            raw, px = textured_image(t, k)
            w.write('/cam', raw, t)
            pixels[t] = px
    w.close()
    return pixels


def message_records(mcap_file: Path) -> list[tuple[str, int, int]]:
    """(topic, file offset, record length) of every message, from the file's own index (chunk
    offsets + MessageIndex records): independent of the code under test."""
    data = mcap_file.read_bytes()
    with mcap_file.open('rb') as fh:
        summary = make_reader(fh).get_summary()
    topics = {c.id: c.topic for c in summary.channels.values()}
    out = []
    for chunk in summary.chunk_indexes:
        body = chunk.chunk_start_offset + 9 + 8 + 8 + 8 + 4 + 4 + len(chunk.compression) + 8
        for channel_id, at in chunk.message_index_offsets.items():
            assert data[at] == 0x07  # MessageIndex: opcode, length, channel, records
            n = struct.unpack_from('<I', data, at + 9 + 2)[0] // 16
            for k in range(n):
                _, offset = struct.unpack_from('<QQ', data, at + 9 + 2 + 4 + 16 * k)
                start = body + offset
                out.append((topics[channel_id], start,
                            9 + struct.unpack_from('<Q', data, start + 1)[0]))
    return sorted(out, key=lambda r: r[1])


def complete_messages(mcap_file: Path, cut: int) -> dict[str, int]:
    """Per topic, messages whose whole record lies before byte ``cut``."""
    counts: dict[str, int] = {}
    for topic, start, length in message_records(mcap_file):
        counts[topic] = counts.get(topic, 0) + (start + length <= cut)
    return counts


def test_chunk_and_data_crcs_are_written_and_checked(tmp_path: Path) -> None:
    ep = tmp_path / 'ep'
    write_bag(ep, seconds=2.0, chunk_bytes=300_000)
    mcap_file = ep / 'ep.mcap'
    with mcap_file.open('rb') as fh:
        records = list(StreamReader(fh, validate_crcs=True, emit_chunks=True).records)
    chunks = [r for r in records if isinstance(r, Chunk)]
    assert len(chunks) > 3 and all(c.uncompressed_crc != 0 for c in chunks)
    assert next(r for r in records if isinstance(r, DataEnd)).data_section_crc != 0


def test_zeroed_block_in_a_chunk_raises_instead_of_wrong_pixels(tmp_path: Path) -> None:
    ep = tmp_path / 'ep'
    pixels = write_bag(ep, seconds=2.0, chunk_bytes=300_000)
    mcap_file = ep / 'ep.mcap'
    images = [r for r in message_records(mcap_file) if r[0] == '/cam']
    _, start, length = images[len(images) // 2]   # zero 4 KB of one image's pixels only
    at = start + length // 2 - 2048
    data = bytearray(mcap_file.read_bytes())
    data[at:at + 4096] = bytes(4096)
    mcap_file.write_bytes(bytes(data))
    with Episode.open(ep) as episode, \
            pytest.raises(CorruptEpisodeError, match=f'{ep}.*checksum'):
        for t, img in episode.images('/cam'):  # CRC 0 (rosbags' writer): wrong pixels here
            np.testing.assert_array_equal(img, pixels[t])
    # comsim-recover skips the damaged chunk, says so, and keeps every other image intact
    report = recover_episode(ep, force=True)
    assert report.damaged and 'CRC mismatch' in report.damaged[0]
    assert 0 < report.messages['/cam'] < len(pixels)
    with Episode.open(ep) as episode:
        got = list(episode.images('/cam'))
    assert len(got) == report.messages['/cam']
    for t, img in got:
        np.testing.assert_array_equal(img, pixels[t])


def test_offered_qos_profiles_recorded_as_rosbag2_does(tmp_path: Path) -> None:
    w = EpisodeBagWriter(tmp_path / 'ep', TOPICS)
    w.set_offered_qos('/cam', [QOS])
    w.open()
    w.set_offered_qos('/joint_states', [dict(QOS, reliability='reliable', depth=10)])
    w.write('/cam', textured_image(1, 0)[0], 1)
    w.write('/joint_states', joint_state_raw(2, [0.0] * 7), 2)
    w.close()
    info = yaml.safe_load((tmp_path / 'ep' / 'metadata.yaml').read_text())
    topics = {t['topic_metadata']['name']: t['topic_metadata']
              for t in info['rosbag2_bagfile_information']['topics_with_message_count']}
    assert topics['/cam']['offered_qos_profiles'] == [QOS]  # version 9: a list of dicts
    assert topics['/joint_states']['offered_qos_profiles'][0]['reliability'] == 'reliable'
    with (tmp_path / 'ep' / 'ep.mcap').open('rb') as fh:
        channels = {c.topic: c for c in make_reader(fh).get_summary().channels.values()}
    assert yaml.safe_load(channels['/cam'].metadata['offered_qos_profiles']) == [QOS]
    assert channels['/cam'].metadata['topic_type_hash'] == topics['/cam']['type_description_hash']
    with AnyReader([tmp_path / 'ep'], default_typestore=TS) as r:
        qos = {c.topic: c.ext.offered_qos_profiles for c in r.connections}
    assert qos['/cam'][0].reliability.name == 'BEST_EFFORT' and qos['/cam'][0].depth == 0
    assert qos['/joint_states'][0].reliability.name == 'RELIABLE'


def test_recover_salvages_every_complete_message_of_a_cut_bag(tmp_path: Path) -> None:
    """The issue's case: a 6 s bag cut mid-file; the unfinished last chunk's complete
    messages are kept too, not only the complete chunks."""
    ep = tmp_path / 'ep'
    write_bag(ep, seconds=6.0)
    mcap_file = ep / 'ep.mcap'
    with mcap_file.open('rb') as fh:
        chunks = make_reader(fh).get_summary().chunk_indexes
    last = chunks[len(chunks) // 2]
    cut = last.chunk_start_offset + int(last.chunk_length * 0.6)
    expected = complete_messages(mcap_file, cut)
    os.truncate(mcap_file, cut)
    (ep / 'metadata.yaml').unlink()  # as after a kill
    report = recover_episode(ep)
    assert report.messages == expected
    assert report.stopped_reason and 'unfinished' in report.stopped_reason
    assert report.from_unfinished_chunk > 0
    with Episode.open(ep) as episode:
        js = episode.joint_states()
        assert len(js.t_ns) == expected['/joint_states']
        np.testing.assert_allclose(js.position[:, 0], np.arange(len(js.t_ns)) / 1000)


def test_recover_refuses_a_file_that_is_not_mcap_and_changes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ep = tmp_path / 'ep'
    ep.mkdir()
    junk = np.random.default_rng(0).integers(0, 256, 50_000, dtype=np.uint8).tobytes()
    (ep / 'ep.mcap').write_bytes(junk)
    (ep / 'metadata.yaml').write_text('rosbag2_bagfile_information: {version: 9}\n')
    (ep / 'episode.yaml').write_text('status: failed\n')
    before = {p.name: p.read_bytes() for p in ep.iterdir()}
    assert recover_main([str(ep)]) == 2
    err = capsys.readouterr().err
    assert err.startswith('comsim-recover: error: ') and 'not an MCAP file' in err
    assert str(ep / 'ep.mcap') in err and err.count('\n') == 1
    assert {p.name: p.read_bytes() for p in ep.iterdir()} == before
    assert not any(p.name.startswith('.') for p in tmp_path.iterdir())  # no work dir left
    (ep / 'ep.mcap').write_bytes(b'')  # killed before the first flush
    assert recover_main([str(ep)]) == 2
    assert 'empty file' in capsys.readouterr().err and (ep / 'ep.mcap').read_bytes() == b''


def test_recover_backs_up_metadata_yaml_before_replacing_it(tmp_path: Path) -> None:
    ep = tmp_path / 'ep'
    write_bag(ep, seconds=1.0, chunk_bytes=100_000)
    old_meta = (ep / 'metadata.yaml').read_text()
    size = (ep / 'ep.mcap').stat().st_size
    os.truncate(ep / 'ep.mcap', size * 2 // 3)  # metadata.yaml now promises what is gone
    report = recover_episode(ep)
    assert report.status == 'recovered'
    assert (ep / 'metadata.yaml.orig').read_text() == old_meta
    assert (ep / 'ep.mcap.orig').stat().st_size == size * 2 // 3
    assert {p.name for p in report.backups} == {'ep.mcap.orig', 'metadata.yaml.orig'}
    with AnyReader([ep], default_typestore=TS) as r:
        assert r.message_count == report.total > 0


def test_recover_resumes_after_a_zeroed_chunk_header(tmp_path: Path) -> None:
    """Record headers carry no CRC: 4 KB of zeros over a chunk's start must lose that chunk
    only, not everything after it (reading resumes at the next chunk whose CRC checks out)."""
    ep = tmp_path / 'ep'
    pixels = write_bag(ep, seconds=2.0, chunk_bytes=300_000)
    mcap_file = ep / 'ep.mcap'
    with mcap_file.open('rb') as fh:
        chunks = make_reader(fh).get_summary().chunk_indexes
    assert len(chunks) > 4
    hit = chunks[1]
    total = {t: sum(1 for r in message_records(mcap_file) if r[0] == t) for t in ('/cam',
                                                                                 '/joint_states')}
    lost = {t: sum(1 for r in message_records(mcap_file) if r[0] == t
                   and hit.chunk_start_offset <= r[1] < hit.chunk_start_offset + hit.chunk_length)
            for t in total}
    data = bytearray(mcap_file.read_bytes())
    data[hit.chunk_start_offset:hit.chunk_start_offset + 4096] = bytes(4096)
    mcap_file.write_bytes(bytes(data))
    report = recover_episode(ep, force=True)
    assert any('damaged bytes' in d for d in report.damaged), report.damaged
    assert report.messages == {t: total[t] - lost[t] for t in total}
    with Episode.open(ep) as episode:
        for t, img in episode.images('/cam'):
            np.testing.assert_array_equal(img, pixels[t])
