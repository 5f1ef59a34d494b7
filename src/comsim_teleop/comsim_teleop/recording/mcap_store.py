"""An MCAP data file with CRCs plus rosbag2's ``metadata.yaml``, written as ``ros2 bag record`` does.

Why not rosbags' MCAP writer: it writes every CRC as 0, so a zeroed or flipped block in the
middle of a bag reads back silently as wrong pixels. The ``mcap`` package's writer computes the
chunk CRC (checked by rosbags' reader and ours) and the data-section CRC (checked by
``comsim-recover`` and ``mcap`` readers). Chunks are stored uncompressed (camera images do not
compress, and recording must keep up with the cameras).

rosbag2 conventions kept: profile ``ros2``, schemas ``ros2msg``, channels ``cdr`` with
``offered_qos_profiles`` (YAML text of a list of QoS dicts) in their metadata, a ``rosbag2``
metadata record with the serialized bag information, and ``metadata.yaml`` version 9.

Channels are registered at a topic's first message (or at close for a topic that never got one),
so the QoS the recorder matched on the publishers is known when it is written.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from mcap.writer import CompressionType, Writer

METADATA_VERSION = 9
MCAP_LIBRARY = 'comsim (mcap python writer)'


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


def bag_information(topics: list[TopicEntry], file_name: str, start_ns: int, end_ns: int,
                    custom_data: dict[str, str], distro: str) -> dict[str, Any]:
    """The ``rosbag2_bagfile_information`` block of metadata.yaml (version 9)."""
    count = sum(t.count for t in topics)
    start = start_ns if count else 0
    duration = max(0, end_ns - start_ns) if count else 0
    return {
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
        'ros_distro': distro,
    }


class McapBagStore:
    """Writes ``<bag_dir>/<bag_dir.name>.mcap``; ``close`` adds the summary and metadata.yaml.

    Not thread-safe (one writer thread). ``OSError`` from the disk propagates unchanged.
    """

    def __init__(self, bag_dir: Path, *, distro: str, chunk_bytes: int) -> None:
        self.bag_dir = Path(bag_dir)
        self.distro = distro
        self.chunk_bytes = chunk_bytes
        self.file = self.bag_dir / f'{self.bag_dir.name}.mcap'
        self.topics: dict[str, TopicEntry] = {}
        self.custom_data: dict[str, str] = {}
        self._schemas: dict[str, int] = {}
        self._fh: io.BufferedWriter | None = None
        self._mcap: Writer | None = None
        self._start_ns: int | None = None
        self._end_ns = 0
        self.pending_messages = 0

    def open(self) -> None:
        """Create the bag directory (FileExistsError if it exists) and start the MCAP file."""
        self.bag_dir.mkdir(parents=True, exist_ok=False)
        self._fh = self.file.open('xb')
        self._mcap = Writer(self._fh, chunk_size=self.chunk_bytes,
                            compression=CompressionType.NONE, enable_crcs=True,
                            enable_data_crcs=True)
        self._mcap.start(profile='ros2', library=MCAP_LIBRARY)

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
                schema_id = self._mcap.register_schema(entry.msgtype, 'ros2msg',
                                                       entry.msgdef.encode())
                self._schemas[entry.msgtype] = schema_id
            entry.channel_id = self._mcap.register_channel(
                entry.name, 'cdr', schema_id,
                {'offered_qos_profiles': qos_yaml(entry.offered_qos)})
        return entry.channel_id

    def write(self, name: str, raw: bytes | memoryview, t_ns: int) -> None:
        """Append one serialized message (log and publish time ``t_ns``)."""
        entry = self.topics[name]
        channel = self._channel(entry)
        assert self._mcap is not None
        self._mcap.add_message(channel, t_ns, bytes(raw), t_ns, entry.count)
        entry.count += 1
        self.pending_messages += 1
        self._start_ns = t_ns if self._start_ns is None else min(self._start_ns, t_ns)
        self._end_ns = max(self._end_ns, t_ns)

    def flush(self) -> None:
        """Close the open chunk (if it holds messages) and hand the bytes to the OS."""
        if self._mcap is not None:
            self._mcap.flush()
            self.pending_messages = 0

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
            info, sort_keys=False, default_flow_style=False)})
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
