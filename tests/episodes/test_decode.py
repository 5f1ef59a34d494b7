"""The rclpy/rosbags JointState interop bug, reproduced with real rclpy bytes, and its fix."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import TS, joint_state_raw
from rosbags.serde import SerdeError

from comsim_core.episodes.decode import (
    deserialize_prefix,
    deserialize_tolerant,
    header_stamp_ns,
    joint_states_from_cdr,
)


def test_rosbags_rejects_rclpy_joint_state_with_empty_velocity() -> None:
    raw = joint_state_raw(1_500_000_000, [0.1, 0.2, 0.3])
    with pytest.raises(SerdeError, match='size mismatch'):
        TS.deserialize_cdr(raw, 'sensor_msgs/msg/JointState')
    _, used = deserialize_prefix(TS, raw, 'sensor_msgs/msg/JointState')
    assert len(raw) - used >= 4  # the trailing bytes rclpy adds


def test_tolerant_decode_matches_rclpy() -> None:
    from rclpy.serialization import deserialize_message  # noqa: PLC0415
    from sensor_msgs.msg import JointState  # noqa: PLC0415

    raw = joint_state_raw(1_500_000_000, [0.1, 0.2, 0.3])
    msg = deserialize_tolerant(TS, raw, 'sensor_msgs/msg/JointState')
    ref = deserialize_message(raw, JointState)
    assert list(msg.name) == list(ref.name) == ['joint1', 'joint2', 'joint3']
    np.testing.assert_array_equal(msg.position, ref.position)
    assert msg.velocity.size == 0 and msg.effort.size == 0
    assert msg.header.stamp.sec == 1 and msg.header.stamp.nanosec == 500_000_000


def test_tolerant_decode_still_rejects_truncation_and_plain_bytes_unchanged() -> None:
    raw = joint_state_raw(1, [0.1, 0.2, 0.3])
    with pytest.raises(SerdeError):
        deserialize_tolerant(TS, raw[:40], 'sensor_msgs/msg/JointState')
    ok = joint_state_raw(1, [0.5], rclpy_bytes=False)
    assert deserialize_tolerant(TS, ok, 'sensor_msgs/msg/JointState').position[0] == 0.5


def test_header_stamp_read_from_bytes_matches_full_decode_both_endians() -> None:
    from rclpy.serialization import serialize_message  # noqa: PLC0415
    from sensor_msgs.msg import Image  # noqa: PLC0415

    img = Image(height=2, width=3, encoding='rgb8', step=9, data=bytes(range(18)))
    img.header.stamp.sec, img.header.stamp.nanosec = 1_700_000_123, 456_789_012
    raw = serialize_message(img)   # rclpy's bytes: little-endian
    assert header_stamp_ns(raw) == 1_700_000_123_456_789_012
    msg = TS.deserialize_cdr(raw, 'sensor_msgs/msg/Image')
    big = TS.serialize_cdr(msg, 'sensor_msgs/msg/Image', little_endian=False)
    assert big[1] == 0 and header_stamp_ns(big) == 1_700_000_123_456_789_012
    with pytest.raises(SerdeError):
        header_stamp_ns(raw[:10])
    with pytest.raises(SerdeError):
        header_stamp_ns(b'\x07\x07' + bytes(raw[2:]))


@pytest.mark.parametrize('frame_id', ['', 'f', 'cam_optical_frame', 'abc'])
def test_rgb8_image_cdr_is_byte_identical_to_rosbags(frame_id) -> None:
    from comsim_core.episodes.encode import rgb8_image_cdr  # noqa: PLC0415

    rgb = np.random.default_rng(0).integers(0, 255, (5, 7, 3), dtype=np.uint8)
    stamp = 1_700_000_001_234_567_890
    T = TS.types
    msg = T['sensor_msgs/msg/Image'](
        header=T['std_msgs/msg/Header'](stamp=T['builtin_interfaces/msg/Time'](
            sec=1_700_000_001, nanosec=234_567_890), frame_id=frame_id),
        height=5, width=7, encoding='rgb8', is_bigendian=0, step=21, data=rgb.reshape(-1))
    assert rgb8_image_cdr(rgb, stamp, frame_id) == bytes(TS.serialize_cdr(
        msg, 'sensor_msgs/msg/Image'))
    with pytest.raises(ValueError, match='H, W, 3'):
        rgb8_image_cdr(rgb[..., 0], stamp, frame_id)


@pytest.mark.parametrize('frame_id', ['', 'cam_optical_frame'])
def test_mono8_image_cdr_is_byte_identical_to_rosbags(frame_id) -> None:
    from comsim_core.episodes.encode import mono8_image_cdr  # noqa: PLC0415

    mono = np.random.default_rng(0).integers(0, 4, (5, 7), dtype=np.uint8)
    T = TS.types
    msg = T['sensor_msgs/msg/Image'](
        header=T['std_msgs/msg/Header'](stamp=T['builtin_interfaces/msg/Time'](
            sec=3, nanosec=5), frame_id=frame_id),
        height=5, width=7, encoding='mono8', is_bigendian=0, step=7, data=mono.reshape(-1))
    assert mono8_image_cdr(mono, 3_000_000_005, frame_id) == bytes(TS.serialize_cdr(
        msg, 'sensor_msgs/msg/Image'))
    with pytest.raises(ValueError, match=r'\(H, W\)'):
        mono8_image_cdr(np.zeros((5, 7, 3), np.uint8), 0, frame_id)


@pytest.mark.parametrize('names', [['j1'], ['joint1', 'joint2', 'joint3'], ['a', 'bb', 'ccc',
                                                                             'dddd', 'e', 'g']])
def test_joint_state_cdr_is_byte_identical_to_rosbags(names) -> None:
    from comsim_core.episodes.encode import joint_state_cdr  # noqa: PLC0415

    q = np.linspace(-1.0, 1.0, len(names))
    T = TS.types
    msg = T['sensor_msgs/msg/JointState'](
        header=T['std_msgs/msg/Header'](stamp=T['builtin_interfaces/msg/Time'](
            sec=12, nanosec=345), frame_id=''), name=names, position=q,
        velocity=np.zeros(0), effort=np.zeros(0))
    want = bytes(TS.serialize_cdr(msg, 'sensor_msgs/msg/JointState'))
    assert joint_state_cdr(names, q, 12_000_000_345) == want
    with pytest.raises(ValueError, match='joint names'):
        joint_state_cdr(names, np.append(q, 0.0), 0)


def _joint_state(t_ns: int, names: list[str], pos, vel=(), eff=(), frame_id: str = '',
                 little_endian: bool = True) -> bytes:
    msg = TS.types['sensor_msgs/msg/JointState'](
        header=TS.types['std_msgs/msg/Header'](
            stamp=TS.types['builtin_interfaces/msg/Time'](sec=t_ns // 10**9,
                                                          nanosec=t_ns % 10**9),
            frame_id=frame_id),
        name=names, position=np.asarray(pos, np.float64), velocity=np.asarray(vel, np.float64),
        effort=np.asarray(eff, np.float64))
    return bytes(TS.serialize_cdr(msg, 'sensor_msgs/msg/JointState',
                                  little_endian=little_endian))


@pytest.mark.parametrize('case', ['rclpy', 'velocity_and_effort', 'frame_id'])
def test_joint_states_decoded_at_once_equal_one_by_one(case) -> None:
    rng = np.random.default_rng(0)
    names = ['shoulder', 'elbow', 'wrist_1', 'gripper']
    raws = []
    for i in range(20):
        t = 1_700_000_000_000_000_000 + i * 2_000_000
        pos = rng.normal(size=4)
        if case == 'rclpy':   # trailing bytes after each message (the interop bug)
            raws.append(joint_state_raw(t, list(pos), names=names))
        elif case == 'velocity_and_effort':
            raws.append(_joint_state(t, names, pos, rng.normal(size=4), rng.normal(size=4)))
        else:
            raws.append(_joint_state(t, names, pos, frame_id='base_link_odd'))
    names_at_once, stamps, (pos, vel, eff) = joint_states_from_cdr(raws)
    assert names_at_once == names
    for i, raw in enumerate(raws):
        msg = deserialize_tolerant(TS, raw, 'sensor_msgs/msg/JointState')
        assert stamps[i] == msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
        np.testing.assert_array_equal(pos[i], msg.position)
        for got, ref in ((vel, msg.velocity), (eff, msg.effort)):
            if ref.size:
                np.testing.assert_array_equal(got[i], ref)
            else:
                assert got is None


def test_joint_states_of_different_layouts_are_left_to_one_by_one_decoding() -> None:
    a = _joint_state(1, ['j1', 'j2'], [0.1, 0.2])
    assert joint_states_from_cdr([a, _joint_state(2, ['j2', 'j1'], [0.1, 0.2])]) is None
    assert joint_states_from_cdr([a, _joint_state(2, ['j1', 'j2'], [0.1, 0.2], [1, 2])]) is None
    assert joint_states_from_cdr([a, _joint_state(2, ['j1', 'j2'], [0.1, 0.2],
                                                  frame_id='x')]) is None
    assert joint_states_from_cdr([_joint_state(1, ['j1'], [0.1], little_endian=False)]) is None
    assert joint_states_from_cdr([a, a[:20]]) is None   # truncated
    assert joint_states_from_cdr([]) is None


def test_joint_states_at_once_ignore_junk_in_alignment_padding() -> None:
    """rclpy leaves padding bytes uninitialised: they must not send decoding one by one."""
    a = _joint_state(1, ['j1', 'j2'], [0.1, 0.2], [0.3, 0.4])
    b = bytearray(_joint_state(2, ['j1', 'j2'], [0.5, 0.6], [0.7, 0.8]))
    assert b[17:20] == b'\x00\x00\x00'   # after the 1-byte frame_id, before the names count
    b[17:20] = b'\xab\xcd\xef'
    names, stamps, (pos, vel, eff) = joint_states_from_cdr([a, bytes(b)])
    assert names == ['j1', 'j2'] and stamps.tolist() == [1, 2] and eff is None
    np.testing.assert_array_equal(pos, [[0.1, 0.2], [0.5, 0.6]])
    np.testing.assert_array_equal(vel, [[0.3, 0.4], [0.7, 0.8]])
