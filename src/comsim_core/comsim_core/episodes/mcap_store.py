"""An MCAP file with CRCs plus rosbag2's ``metadata.yaml``, laid out as ``ros2 bag record`` does.

Why not rosbags' MCAP writer: it writes every CRC as 0, so a zeroed or flipped block in the
middle of a bag reads back silently as wrong pixels. Here every chunk carries its CRC (checked
by rosbags' reader, ours and ``mcap``'s) and DataEnd the data-section CRC (checked by
``comsim-recover`` and ``mcap`` readers). Chunks are stored uncompressed (camera images do not
compress, and recording must keep up with the cameras).

Why not the ``mcap`` package's ``Writer`` (which computes both CRCs too): it copies every
message several times (chunk builder, chunk record, record builder), which measured at about
half the write rate for camera images. ``ChunkFile`` keeps a chunk as a list of the messages'
own bytes and writes them as they are; the small records (schemas, channels, indexes, summary)
use ``mcap.records``' writers, so the format stays the package's.

rosbag2 conventions kept: profile ``ros2``, schemas ``ros2msg``, channels ``cdr`` with
``offered_qos_profiles`` (YAML text of a list of QoS dicts) and ``topic_type_hash`` in their
metadata, a ``rosbag2`` metadata record with the serialized bag information and ``ROS_DISTRO``,
and ``metadata.yaml`` in the version the bag's distro reads (``distro.py``: Humble 5, else 9).

Channels are registered at a topic's first message (or at close for a topic that never got one),
so the QoS the recorder matched on the publishers is known when it is written.
"""

from __future__ import annotations

import io
import os
import struct
import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from mcap.data_stream import RecordBuilder
from mcap.opcode import Opcode
from mcap.records import (
    Channel,
    ChunkIndex,
    DataEnd,
    Footer,
    Header,
    MessageIndex,
    Metadata,
    MetadataIndex,
    Schema,
    Statistics,
    SummaryOffset,
)

from .distro import BagFormat, bag_format, conform, offered_qos

METADATA_VERSION = 9  # built in this form, then conformed to the bag's distro
MCAP_LIBRARY = 'comsim'
MCAP_MAGIC = b'\x89MCAP0\r\n'
_MESSAGE_HEAD = struct.Struct('<BQHIQQ')   # opcode, length, channel, sequence, log, publish
_CHUNK_HEAD = struct.Struct('<BQQQQII')    # opcode, length, start, end, size, crc, '' length
_U64 = struct.Struct('<Q')


@dataclass
class TopicEntry:
    """One topic of the bag: what its schema and channel need, and what was written."""

    name: str
    msgtype: str
    msgdef: str
    rihs01: str
    offered_qos: list[dict[str, Any]] = field(default_factory=list)
    channel_id: int | None = None
    count: int = 0


def qos_yaml(profiles: list[dict[str, Any]]) -> str:
    """rosbag2's MCAP channel form of ``offered_qos_profiles``: YAML text of the list."""
    return yaml.safe_dump(profiles, sort_keys=False, default_flow_style=False).strip() \
        if profiles else ''


def channel_qos(profiles: list[dict[str, Any]], fmt: BagFormat) -> str:
    """An MCAP channel's ``offered_qos_profiles`` text in the form ``fmt``'s rosbag2 parses."""
    return offered_qos(profiles, fmt) if fmt.qos_as_text else qos_yaml(profiles)


def bag_information(topics: list[TopicEntry], file_name: str, start_ns: int, end_ns: int,
                    custom_data: dict[str, str], distro: str | None) -> dict[str, Any]:
    """The ``rosbag2_bagfile_information`` block of metadata.yaml, as ``distro`` reads it."""
    count = sum(t.count for t in topics)
    start = start_ns if count else 0
    duration = max(0, end_ns - start_ns) if count else 0
    return conform({
        'version': METADATA_VERSION,
        'storage_identifier': 'mcap',
        'duration': {'nanoseconds': duration},
        'starting_time': {'nanoseconds_since_epoch': start},
        'message_count': count,
        'topics_with_message_count': [
            {'topic_metadata': {'name': t.name, 'type': t.msgtype,
                                'serialization_format': 'cdr',
                                'offered_qos_profiles': list(t.offered_qos),
                                'type_description_hash': t.rihs01},
             'message_count': t.count}
            for t in topics],
        'compression_format': '',
        'compression_mode': '',
        'relative_file_paths': [file_name],
        'files': [{'path': file_name, 'starting_time': {'nanoseconds_since_epoch': start},
                   'duration': {'nanoseconds': duration}, 'message_count': count}],
        'custom_data': dict(custom_data) or None,
        'ros_distro': '',
    }, bag_format(distro))


class ChunkFile:
    """A chunked, uncompressed MCAP file with chunk and data-section CRCs, message indexes and a
    summary (schemas, channels, statistics, chunk and metadata indexes, summary offsets).

    Schemas and channels go to the data section outside chunks as they are registered, so a
    file cut anywhere still names every channel its complete messages belong to.
    """

    def __init__(self, fh: io.BufferedWriter, profile: str) -> None:
        self._fh = fh
        self._crc = 0
        self._failed: OSError | None = None
        self._schemas: list[Schema] = []
        self._channels: list[Channel] = []
        self._chunk_indexes: list[ChunkIndex] = []
        self._metadata_indexes: list[MetadataIndex] = []
        self._counts: dict[int, int] = defaultdict(int)
        self._start_ns: int | None = None
        self._end_ns = 0
        self._reset_chunk()
        self._put(MCAP_MAGIC)
        self._put_records(Header(profile, MCAP_LIBRARY))

    def _reset_chunk(self) -> None:
        self._pieces: list[bytes] = []
        self._chunk_size = 0
        self._chunk_start: int | None = None
        self._chunk_end = 0
        self._index: dict[int, list[tuple[int, int]]] = defaultdict(list)

    @property
    def pending_bytes(self) -> int:
        """Bytes of messages in the open chunk."""
        return self._chunk_size

    def _put(self, data: bytes) -> None:
        """Append to the data section; after one failed write, every later one fails too
        (writing on after a partial record would leave bytes no reader can frame)."""
        if self._failed is not None:
            raise self._failed
        self._crc = zlib.crc32(data, self._crc)
        try:
            self._fh.write(data)
        except OSError as exc:
            self._failed = exc
            raise

    def _put_records(self, *records: Any) -> int:
        builder = RecordBuilder()
        for record in records:
            record.write(builder)
        data = builder.end()
        self._put(data)
        return len(data)

    def add_schema(self, name: str, encoding: str, data: bytes) -> int:
        schema = Schema(id=len(self._schemas) + 1, name=name, encoding=encoding, data=data)
        self._schemas.append(schema)
        self._put_records(schema)
        return schema.id

    def add_channel(self, topic: str, encoding: str, schema_id: int,
                    metadata: dict[str, str]) -> int:
        channel = Channel(id=len(self._channels) + 1, topic=topic, message_encoding=encoding,
                          schema_id=schema_id, metadata=metadata)
        self._channels.append(channel)  # to the file now: before the open chunk's bytes
        self._put_records(channel)
        return channel.id

    def add_message(self, channel_id: int, sequence: int, t_ns: int, data: bytes) -> None:
        """Into the open chunk (no copy of ``data``: it is written as it is at chunk close)."""
        head = _MESSAGE_HEAD.pack(Opcode.MESSAGE, 22 + len(data), channel_id, sequence,
                                  t_ns, t_ns)
        self._index[channel_id].append((t_ns, self._chunk_size))
        self._pieces += (head, data)
        self._chunk_size += len(head) + len(data)
        self._chunk_start = t_ns if self._chunk_start is None else min(self._chunk_start, t_ns)
        self._chunk_end = max(self._chunk_end, t_ns)
        self._counts[channel_id] += 1
        self._start_ns = t_ns if self._start_ns is None else min(self._start_ns, t_ns)
        self._end_ns = max(self._end_ns, t_ns)

    def flush_chunk(self) -> None:
        """Write the open chunk (if it holds messages) and its message indexes."""
        if not self._pieces:
            return
        crc = 0
        for piece in self._pieces:
            crc = zlib.crc32(piece, crc)
        size = self._chunk_size
        start = self._chunk_start or 0
        head = _CHUNK_HEAD.pack(Opcode.CHUNK, 8 + 8 + 8 + 4 + 4 + 8 + size, start,
                                self._chunk_end, size, crc, 0) + _U64.pack(size)
        offset = self._fh.tell()
        self._put(head)
        for piece in self._pieces:
            self._put(piece)
        index_start = self._fh.tell()
        offsets: dict[int, int] = {}
        builder = RecordBuilder()
        for channel_id, records in self._index.items():
            offsets[channel_id] = index_start + builder.count
            MessageIndex(channel_id, records).write(builder)
        index_data = builder.end()
        self._put(index_data)
        self._chunk_indexes.append(ChunkIndex(
            message_start_time=start, message_end_time=self._chunk_end,
            chunk_start_offset=offset, chunk_length=len(head) + size,
            message_index_offsets=offsets, message_index_length=len(index_data),
            compression='', compressed_size=size, uncompressed_size=size))
        self._reset_chunk()

    def flush(self) -> None:
        """The open chunk to the file, the file's buffer to the OS (a kill loses nothing)."""
        self.flush_chunk()
        try:
            self._fh.flush()
        except OSError as exc:
            self._failed = exc
            raise

    def add_metadata(self, name: str, data: dict[str, str]) -> None:
        self.flush_chunk()
        offset = self._fh.tell()
        length = self._put_records(Metadata(name=name, metadata=data))
        self._metadata_indexes.append(MetadataIndex(offset=offset, length=length, name=name))

    def finish(self) -> None:
        """Last chunk, DataEnd with the data CRC, summary with its CRC, footer, magic."""
        self.flush_chunk()
        if self._failed is not None:
            raise self._failed
        self._fh.write(_record_bytes(DataEnd(self._crc)))
        summary_start = self._fh.tell()
        stats = Statistics(
            message_count=sum(self._counts.values()), schema_count=len(self._schemas),
            channel_count=len(self._channels), attachment_count=0,
            metadata_count=len(self._metadata_indexes), chunk_count=len(self._chunk_indexes),
            message_start_time=self._start_ns or 0, message_end_time=self._end_ns,
            channel_message_counts=dict(self._counts))
        builder = RecordBuilder()
        groups = []
        for opcode, records in ((Opcode.SCHEMA, self._schemas),
                                (Opcode.CHANNEL, self._channels),
                                (Opcode.STATISTICS, [stats]),
                                (Opcode.CHUNK_INDEX, self._chunk_indexes),
                                (Opcode.METADATA_INDEX, self._metadata_indexes)):
            begin = builder.count
            for record in records:
                record.write(builder)
            groups.append(SummaryOffset(opcode, summary_start + begin, builder.count - begin))
        offsets_start = summary_start + builder.count
        for group in groups:
            group.write(builder)
        summary = builder.end()
        crc = zlib.crc32(struct.pack('<BQQQ', Opcode.FOOTER, 20, summary_start, offsets_start),
                         zlib.crc32(summary))
        self._fh.write(summary)
        self._fh.write(_record_bytes(Footer(summary_start, offsets_start, crc)))
        self._fh.write(MCAP_MAGIC)


def _record_bytes(record: Any) -> bytes:
    builder = RecordBuilder()
    record.write(builder)
    return builder.end()


class McapBagStore:
    """Writes ``<bag_dir>/<bag_dir.name>.mcap``; ``close`` adds the summary and metadata.yaml.

    Not thread-safe (one writer thread). ``OSError`` from the disk propagates unchanged.
    """

    def __init__(self, bag_dir: Path, *, distro: str | None, chunk_bytes: int) -> None:
        self.bag_dir = Path(bag_dir)
        self.format = bag_format(distro)
        self.distro = self.format.distro
        self.chunk_bytes = chunk_bytes
        self.file = self.bag_dir / f'{self.bag_dir.name}.mcap'
        self.topics: dict[str, TopicEntry] = {}
        self.custom_data: dict[str, str] = {}
        self._schemas: dict[str, int] = {}
        self._fh: io.BufferedWriter | None = None
        self._mcap: ChunkFile | None = None
        self._start_ns: int | None = None
        self._end_ns = 0

    def open(self) -> None:
        """Create the bag directory (FileExistsError if it exists) and start the MCAP file."""
        self.bag_dir.mkdir(parents=True, exist_ok=False)
        self._fh = self.file.open('xb')
        self._mcap = ChunkFile(self._fh, profile='ros2')

    def add_topic(self, name: str, msgtype: str, msgdef: str, rihs01: str,
                  offered_qos: list[dict[str, Any]] | None = None) -> None:
        """Declare a topic (its channel is written with its first message)."""
        self.topics[name] = TopicEntry(name, msgtype, msgdef, rihs01, list(offered_qos or []))

    def set_offered_qos(self, name: str, profiles: list[dict[str, Any]]) -> None:
        """QoS of the topic's publishers; used if its channel is not written yet."""
        self.topics[name].offered_qos = list(profiles)

    def _channel(self, entry: TopicEntry) -> int:
        assert self._mcap is not None
        if entry.channel_id is None:
            schema_id = self._schemas.get(entry.msgtype)
            if schema_id is None:
                schema_id = self._mcap.add_schema(entry.msgtype, 'ros2msg',
                                                  entry.msgdef.encode())
                self._schemas[entry.msgtype] = schema_id
            entry.channel_id = self._mcap.add_channel(
                entry.name, 'cdr', schema_id,
                {'offered_qos_profiles': channel_qos(entry.offered_qos, self.format),
                 'topic_type_hash': entry.rihs01})
        return entry.channel_id

    def write(self, name: str, raw: bytes | memoryview, t_ns: int) -> None:
        """Append one serialized message (log and publish time ``t_ns``)."""
        entry = self.topics[name]
        channel = self._channel(entry)
        assert self._mcap is not None
        self._mcap.add_message(channel, entry.count, t_ns, bytes(raw))
        if self._mcap.pending_bytes >= self.chunk_bytes:
            self._mcap.flush_chunk()
        entry.count += 1
        self._start_ns = t_ns if self._start_ns is None else min(self._start_ns, t_ns)
        self._end_ns = max(self._end_ns, t_ns)

    def flush(self) -> None:
        """Close the open chunk (if it holds messages) and hand the bytes to the OS."""
        if self._mcap is not None:
            self._mcap.flush()

    def info(self) -> dict[str, Any]:
        """metadata.yaml's bag information for what was written so far."""
        return bag_information(list(self.topics.values()), self.file.name,
                               self._start_ns or 0, self._end_ns, self.custom_data, self.distro)

    def close(self) -> None:
        """Summary section (with the chunk index, CRCs), then metadata.yaml atomically."""
        assert self._mcap is not None and self._fh is not None
        for entry in self.topics.values():
            self._channel(entry)
        info = self.info()
        self._mcap.add_metadata('rosbag2', {'serialized_metadata': yaml.safe_dump(
            info, sort_keys=False, default_flow_style=False), 'ROS_DISTRO': self.distro})
        self._mcap.finish()
        self._fh.flush()
        self._fh.close()
        self._fh, self._mcap = None, None
        text = yaml.safe_dump({'rosbag2_bagfile_information': info}, sort_keys=False,
                              default_flow_style=False)
        meta = self.bag_dir / 'metadata.yaml'
        tmp = meta.with_name('.metadata.yaml.tmp')
        tmp.write_text(text, encoding='utf8')
        os.replace(tmp, meta)

    def abort(self) -> None:
        """Close the file as it is (no summary, no metadata.yaml)."""
        fh, self._fh, self._mcap = self._fh, None, None
        if fh is not None:
            try:
                fh.close()
            except OSError:
                pass  # the buffer could not be flushed (disk full): what is on disk stays
