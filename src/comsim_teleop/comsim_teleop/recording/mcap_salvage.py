"""Read every complete message record of an MCAP file, even one cut off mid-chunk.

``mcap``'s ``StreamReader`` yields a chunk only once it was read whole, so a kill in the middle
of a chunk (up to ``chunk_bytes`` of data) loses every message of that chunk although most of
them are complete on disk. This parser walks the records itself:

* a complete chunk is checked against its CRC (when non-zero) and its records yielded; a chunk
  whose CRC does not match is skipped whole and reported (its bytes cannot be trusted);
* the unfinished last chunk (uncompressed: what we write) is parsed record by record and every
  record that lies entirely in the file is yielded;
* records outside chunks (an unchunked file) are handled the same way.

Pure over a bytes-like buffer (an ``mmap`` of the file): no I/O, so it is testable on bytes.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from io import BytesIO

from mcap.data_stream import ReadDataStream
from mcap.opcode import Opcode
from mcap.records import Channel, Message, Schema

from comsim_core.episodes.mcap_store import MCAP_MAGIC

_HEAD = struct.Struct('<BQ')
_CHUNK_FIXED = struct.Struct('<QQQI')  # start, end, uncompressed size, uncompressed crc
_PARSED = (Opcode.SCHEMA, Opcode.CHANNEL, Opcode.MESSAGE)
_OPCODES = frozenset(int(o) for o in Opcode)


def _parse(opcode: int, body: bytes) -> Schema | Channel | Message:
    stream = ReadDataStream(BytesIO(body))
    if opcode == Opcode.MESSAGE:
        return Message.read(stream, len(body))
    return Schema.read(stream) if opcode == Opcode.SCHEMA else Channel.read(stream)


@dataclass
class SalvageLog:
    """What the parse met besides good records: damage, and where reading stopped."""

    bad_chunks: list[str] = field(default_factory=list)
    truncated: str | None = None
    partial_chunk_messages: int = 0


def is_mcap(head: bytes) -> bool:
    """Whether a file starts with the MCAP magic."""
    return bytes(head[:len(MCAP_MAGIC)]) == MCAP_MAGIC


def _valid_chunk_at(buf: memoryview, pos: int, end: int) -> bool:
    """Whether a whole, uncompressed chunk with a non-zero, matching CRC starts at ``pos``."""
    if end - pos < _HEAD.size + _CHUNK_FIXED.size + 12:
        return False
    opcode, length = _HEAD.unpack_from(buf, pos)
    body = pos + _HEAD.size
    if opcode != Opcode.CHUNK or body + length > end:
        return False
    _, _, size, crc = _CHUNK_FIXED.unpack_from(buf, body)
    (clen,) = struct.unpack_from('<I', buf, body + _CHUNK_FIXED.size)
    data = body + _CHUNK_FIXED.size + 4 + clen + 8
    if clen or not crc or data > body + length:
        return False
    (data_len,) = struct.unpack_from('<Q', buf, data - 8)
    return (data_len == size and data + data_len == body + length
            and zlib.crc32(buf[data:data + data_len]) == crc)


def _next_valid_chunk(buf: memoryview, start: int, end: int, block: int = 1 << 24) -> int | None:
    """Offset of the next verifiable chunk at or after ``start`` (record headers carry no CRC:
    after damaged bytes, reading resumes only where a chunk proves itself by its own CRC)."""
    pos = start
    while pos < end:
        window = bytes(buf[pos:min(pos + block, end)])
        i = window.find(bytes([Opcode.CHUNK]))
        while i >= 0:
            if _valid_chunk_at(buf, pos + i, end):
                return pos + i
            i = window.find(bytes([Opcode.CHUNK]), i + 1)
        pos += block
    return None


def _records(buf: memoryview, start: int, end: int, log: SalvageLog, where: str,
             in_partial: bool = False) -> Iterator[Schema | Channel | Message]:
    """Schema/Channel/Message records in ``buf[start:end]``, descending into chunks."""
    pos = start
    while pos < end:
        if end - pos < _HEAD.size:
            log.truncated = f'{where}: {end - pos} trailing bytes at offset {pos}'
            return
        opcode, length = _HEAD.unpack_from(buf, pos)
        body = pos + _HEAD.size
        if where == 'data section' and (opcode not in _OPCODES or body + length > end):
            # A damaged header (zeroed bytes, a wild length) or the unfinished last record:
            # resume at the next chunk that checks out, if there is one after it.
            resume = _next_valid_chunk(buf, pos + 1, end)
            if resume is not None:
                log.bad_chunks.append(f'damaged bytes at offsets {pos}-{resume - 1} '
                                      f'(no valid record header); skipped')
                pos = resume
                continue
            if opcode not in _OPCODES:
                log.truncated = (f'{where}: no valid record at offset {pos} '
                                 f'(opcode 0x{opcode:02x}) nor any valid chunk after it')
                return
        if opcode == Opcode.DATA_END and where == 'data section' and body + 4 <= end:
            (stored,) = struct.unpack_from('<I', buf, body)
            if stored and zlib.crc32(buf[:pos]) != stored:
                log.bad_chunks.append(f'data section CRC mismatch (stored 0x{stored:08x})')
        if opcode in (Opcode.DATA_END, Opcode.FOOTER):
            return
        if opcode == Opcode.CHUNK:
            yield from _chunk(buf, body, min(body + length, end), body + length <= end, log)
            if body + length > end:
                return
        elif body + length > end:
            log.truncated = (f'{where}: record (opcode 0x{opcode:02x}) at offset {pos} needs '
                             f'{length} bytes, {end - body} left')
            return
        elif opcode in _PARSED:
            record = _parse(opcode, bytes(buf[body:body + length]))
            if in_partial and isinstance(record, Message):
                log.partial_chunk_messages += 1
            yield record
        pos = body + length


def _chunk(buf: memoryview, body: int, end: int, complete: bool,
           log: SalvageLog) -> Iterator[Schema | Channel | Message]:
    """The records of the chunk whose body starts at ``body`` (complete or cut at ``end``)."""
    if end - body < _CHUNK_FIXED.size + 4:
        log.truncated = f'chunk at offset {body - _HEAD.size} cut in its header'
        return
    _, _, size, crc = _CHUNK_FIXED.unpack_from(buf, body)
    pos = body + _CHUNK_FIXED.size
    (clen,) = struct.unpack_from('<I', buf, pos)
    compression = bytes(buf[pos + 4:pos + 4 + clen]).decode('utf8', 'replace')
    pos += 4 + clen
    if end - pos < 8:
        log.truncated = f'chunk at offset {body - _HEAD.size} cut in its header'
        return
    (data_len,) = struct.unpack_from('<Q', buf, pos)
    data_start = pos + 8
    where = f'chunk at offset {body - _HEAD.size}'
    if compression:
        if not complete:
            log.truncated = f'{where}: {compression}-compressed and cut; its messages are lost'
            return
        log.bad_chunks.append(f'{where}: {compression} compression is not salvaged here')
        return
    if complete:
        data = buf[data_start:data_start + data_len]
        if len(data) != size or (crc and zlib.crc32(data) != crc):
            log.bad_chunks.append(f'{where}: CRC mismatch (stored 0x{crc:08x}, '
                                  f'computed 0x{zlib.crc32(data):08x}); chunk skipped')
            return
        yield from _records(buf, data_start, data_start + data_len, log, where)
        return
    yield from _records(buf, data_start, min(end, data_start + data_len), log,
                        f'{where} (unfinished)', in_partial=True)
    if log.truncated is None:
        log.truncated = f'{where} is unfinished'


def salvage(buf: bytes | memoryview, log: SalvageLog) -> Iterator[Schema | Channel | Message]:
    """Every complete Schema/Channel/Message record of an MCAP image, in file order."""
    view = memoryview(buf)
    if not is_mcap(view):
        raise ValueError('not an MCAP file (no MCAP magic at the start)')
    yield from _records(view, len(MCAP_MAGIC), len(view), log, 'data section')
