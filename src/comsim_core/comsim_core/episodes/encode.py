"""CDR encoding of the messages ComSim writes in bulk: rgb8 and mono8 ``sensor_msgs/msg/Image``
and ``sensor_msgs/msg/JointState`` (positions only).

Byte-identical to rosbags' ``serialize_cdr`` (little-endian; tests check), without building
message objects and in one copy of the pixels: a replay writes thousands per episode.
"""
from __future__ import annotations

import struct

import numpy as np


def _string(s: str) -> bytes:
    """A CDR string: uint32 length (NUL included), the bytes, the NUL; no padding after."""
    raw = s.encode() + b'\x00'
    return struct.pack('<I', len(raw)) + raw


def _aligned(buf: bytes) -> bytes:
    """Pad the payload so far to a 4-byte boundary (before a uint32)."""
    return buf + b'\x00' * (-len(buf) % 4)


def rgb8_image_cdr(rgb: np.ndarray, stamp_ns: int, frame_id: str) -> bytes:
    """Serialized ``sensor_msgs/msg/Image`` (encoding rgb8) of an (H, W, 3) uint8 array."""
    rgb = np.ascontiguousarray(rgb, dtype=np.uint8)
    if rgb.ndim != 3 or rgb.shape[2] != 3:
        raise ValueError(f'expected an (H, W, 3) image, got shape {rgb.shape}')
    return _image_cdr(rgb, 'rgb8', stamp_ns, frame_id)


def mono8_image_cdr(mono: np.ndarray, stamp_ns: int, frame_id: str) -> bytes:
    """Serialized ``sensor_msgs/msg/Image`` (encoding mono8) of an (H, W) uint8 array (a label
    image: object ids per pixel)."""
    mono = np.ascontiguousarray(mono, dtype=np.uint8)
    if mono.ndim != 2:
        raise ValueError(f'expected an (H, W) image, got shape {mono.shape}')
    return _image_cdr(mono, 'mono8', stamp_ns, frame_id)


def _image_cdr(pixels: np.ndarray, encoding: str, stamp_ns: int, frame_id: str) -> bytes:
    h, w = pixels.shape[:2]
    head = _aligned(_header(stamp_ns, frame_id)) + struct.pack('<II', h, w)
    head = _aligned(head + _string(encoding) + b'\x00')   # encoding, is_bigendian
    head += struct.pack('<II', pixels.nbytes // h, pixels.nbytes)   # step, data length
    return b''.join((b'\x00\x01\x00\x00', head, pixels))   # the pixels copied once


def _header(stamp_ns: int, frame_id: str) -> bytes:
    """std_msgs/Header: stamp (int32 sec, uint32 nanosec), frame_id."""
    stamp = struct.pack('<iI', int(stamp_ns // 1_000_000_000), int(stamp_ns % 1_000_000_000))
    return stamp + _string(frame_id)


def joint_state_cdr(names: list[str], position: np.ndarray, stamp_ns: int,
                    frame_id: str = '') -> bytes:
    """Serialized ``sensor_msgs/msg/JointState`` with positions (velocity, effort empty)."""
    position = np.ascontiguousarray(position, dtype='<f8').reshape(-1)
    if len(names) != position.size:
        raise ValueError(f'{len(names)} joint names but {position.size} positions')
    buf = _aligned(_header(stamp_ns, frame_id)) + struct.pack('<I', len(names))
    for name in names:
        buf = _aligned(buf) + _string(name)
    buf = _aligned(buf) + struct.pack('<I', position.size)
    buf += b'\x00' * (-len(buf) % 8) + position.tobytes()   # doubles are 8-aligned
    buf = _aligned(buf) + struct.pack('<II', 0, 0)           # velocity[], effort[]
    return b'\x00\x01\x00\x00' + buf
