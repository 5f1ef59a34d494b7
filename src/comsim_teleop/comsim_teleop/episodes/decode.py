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
