"""CDR decoding with rosbags, tolerant of rclpy's trailing bytes.

Interop bug (reproduced in tests/episodes/test_decode.py): rclpy (Fast CDR, Kilted wheels) sizes
its buffer with the *maximum* alignment padding, e.g. 4 bytes per empty ``float64[]``, but writes
no padding for empty sequences. The message is a correct CDR prefix followed by junk (often
uninitialised memory). rosbags' ``deserialize_cdr`` insists that the message ends within 3 bytes of
the buffer end and raises "CDR message size mismatch". We run the same rosbags deserializer and
accept bytes after the end; everything up to the end was parsed exactly as rosbags would.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

import numpy as np
from rosbags.serde import SerdeError

if TYPE_CHECKING:
    from rosbags.typesys.store import Typestore


def deserialize_tolerant(typestore: Typestore, raw: bytes | memoryview, msgtype: str) -> object:
    """Deserialize CDR ``raw`` as ``msgtype``; trailing bytes after the message are ignored."""
    try:
        return typestore.deserialize_cdr(raw, msgtype)
    except SerdeError as exc:
        if 'size mismatch' not in str(exc):
            raise
    msg, _ = deserialize_prefix(typestore, raw, msgtype)
    return msg


def header_stamp_ns(raw: bytes | memoryview) -> int:
    """The header stamp (ns) of a CDR message whose first field is a std_msgs/Header.

    Reads 8 bytes instead of deserializing the message: replay needs only the stamp of each
    recorded image, and a full decode copies every pixel."""
    if len(raw) < 12 or bytes(raw[:2]) not in {b'\x00\x00', b'\x00\x01'}:
        raise SerdeError('Invalid or unsupported CDR encapsulation (or no header stamp).')
    sec, nanosec = struct.unpack_from('<iI' if raw[1] else '>iI', raw, 4)
    return sec * 1_000_000_000 + nanosec


def deserialize_prefix(typestore: Typestore, raw: bytes | memoryview,
                       msgtype: str) -> tuple[object, int]:
    """Deserialize a message from the start of ``raw``; returns it and the bytes it used."""
    if len(raw) < 4 or bytes(raw[:2]) not in {b'\x00\x00', b'\x00\x01'}:
        raise SerdeError('Invalid or unsupported CDR encapsulation.')
    msgdef = typestore.get_msgdef(msgtype)
    func = msgdef.deserialize_cdr_le if raw[1] else msgdef.deserialize_cdr_be
    try:
        message, pos = func(memoryview(raw)[4:], 0, msgdef.cls, typestore)
    except (struct.error, UnicodeDecodeError, ValueError, IndexError) as exc:
        raise SerdeError(f'Could not deserialize {msgtype!r}: {exc}') from exc
    if pos + 4 > len(raw):
        raise SerdeError(f'CDR message for {msgtype!r} is truncated.')
    return message, pos + 4


def _joint_state_layout(
        raw: bytes) -> tuple[list[str], list[tuple[int, int]], list[tuple[int, int]], int] | None:
    """(names, [(offset, length)] of position/velocity/effort, [(start, end)] of the bytes that
    fix the layout (lengths, counts, strings; not padding, which may be junk), end) of a
    little-endian CDR JointState; None where it does not parse."""
    if len(raw) < 16 or raw[:2] != b'\x00\x01':
        return None

    def aligned(p: int, n: int) -> int:   # CDR aligns relative to the payload (after 4 bytes)
        return p + (-(p - 4)) % n

    try:
        fixed = [(0, 4), (12, 16 + struct.unpack_from('<I', raw, 12)[0])]   # frame_id
        p = aligned(fixed[-1][1], 4)
        (count,) = struct.unpack_from('<I', raw, p)
        fixed.append((p, p + 4))
        p += 4
        names = []
        for _ in range(count):
            p = aligned(p, 4)
            (size,) = struct.unpack_from('<I', raw, p)
            fixed.append((p, p + 4 + size))
            names.append(raw[p + 4:p + 4 + size - 1].decode())
            p += 4 + size
        arrays = []
        for _ in range(3):
            p = aligned(p, 4)
            (n,) = struct.unpack_from('<I', raw, p)
            fixed.append((p, p + 4))
            p += 4
            if n:
                p = aligned(p, 8)
            arrays.append((p, n))
            p += 8 * n
    except (struct.error, UnicodeDecodeError):
        return None
    return (names, arrays, fixed, p) if p <= len(raw) else None


def joint_states_from_cdr(
        raws: list[bytes]) -> tuple[list[str], np.ndarray, list[np.ndarray | None]] | None:
    """Decode many ``sensor_msgs/msg/JointState`` at once: (names, header stamps (ns),
    [position, velocity, effort] as (N, n) arrays, None where empty).

    Only for messages that share one layout (same frame_id, names and array lengths: what a
    driver publishes), in little-endian CDR; None otherwise (decode them one by one). Bytes after
    the message are ignored, as in ``deserialize_tolerant``. A replay reads thousands per
    episode; this is ~20x faster than deserializing each.
    """
    if not raws:
        return None
    layout = _joint_state_layout(bytes(raws[0]))
    if layout is None:
        return None
    names, arrays, fixed, end = layout
    if any(len(r) < end for r in raws):
        return None
    rows = np.frombuffer(b''.join(r[:end] for r in raws), np.uint8).reshape(len(raws), end)
    same = np.zeros(end, bool)           # the bytes that fix the layout must match the first's
    for start, stop in fixed:
        same[start:stop] = True
    if not (rows[:, same] == rows[0, same]).all():
        return None
    sec = rows[:, 4:8].copy().view('<i4')[:, 0].astype(np.int64)
    nanosec = rows[:, 8:12].copy().view('<u4')[:, 0].astype(np.int64)
    values = [rows[:, off:off + 8 * n].copy().view('<f8').astype(np.float64) if n else None
              for off, n in arrays]
    return names, sec * 1_000_000_000 + nanosec, values
