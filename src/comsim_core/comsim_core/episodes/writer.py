"""Write one episode as a standard rosbag2 directory from already-serialized CDR bytes.

Layout (readable by ``ros2 bag info``, Foxglove, ``rosbags``): the episode directory *is* the bag
directory: ``<episode>/<episode>.mcap`` (or ``.db3``) plus ``metadata.yaml`` (written at close) and
our ``episode.yaml`` sidecar, which rosbag2 ignores.

MCAP goes through ``McapBagStore`` (``mcap_store.ChunkFile``: chunk, data and summary CRCs,
which rosbags' writer leaves at 0); sqlite3 through rosbags' writer (sqlite has its own page
checks).

Crash exposure, bounded by ``FlushPolicy``: after a write, if the pending data exceeds
``chunk_bytes`` or is older than ``max_age_s``, the MCAP chunk is closed and the file buffer
flushed to the OS; for sqlite3 the transaction is committed (rosbags' sqlite3 writer otherwise
keeps one transaction open until ``close()``, and a kill rolls it back to **zero** messages).

Each topic's connection is created at its first message (the rest at close), so the publishers'
QoS matched by the recorder (``set_offered_qos``) lands in ``offered_qos_profiles`` as rosbag2
records it, and ``ros2 bag play`` replays with the same QoS.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rosbags.rosbag2 import StoragePlugin, Writer, WriterError
from rosbags.rosbag2.metadata import parse_qos
from rosbags.typesys import Stores, get_typestore

from .distro import FORMATS, bag_format, conform_bag, rosbags_version
from .errors import BagWriterError
from .mcap_store import McapBagStore
from .topics import TopicSpec

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rosbags.interfaces import Connection
    from rosbags.typesys.store import Typestore

DISTROS: dict[str, Stores] = {name: fmt.store for name, fmt in FORMATS.items()}
STORAGES = ('mcap', 'sqlite3')


@dataclass(frozen=True)
class FlushPolicy:
    """When to make pending data crash-safe (closed MCAP chunk / committed sqlite3 transaction).

    Smaller values lose less on a crash but cost index entries (MCAP: one chunk index record and
    one message index per channel per chunk) and syscalls.
    """

    chunk_bytes: int = 4 * 2**20
    max_age_s: float | None = 1.0


def should_flush(pending_bytes: int, pending_since_ns: int | None, now_ns: int,
                 policy: FlushPolicy) -> bool:
    """Whether pending data has grown too big or too old under ``policy``."""
    if pending_since_ns is None:
        return False
    if pending_bytes >= policy.chunk_bytes:
        return True
    return policy.max_age_s is not None and now_ns - pending_since_ns >= policy.max_age_s * 1e9


def get_distro_typestore(distro: str | None) -> Typestore:
    """The rosbags typestore for a ROS 2 distro name (kilted, jazzy, humble; None or '':
    $ROS_DISTRO, else kilted)."""
    return get_typestore(bag_format(distro).store)


def _rebind_sqlite_connection(store: object) -> None:
    """Reopen rosbags' sqlite3 connection so another thread may use it.

    Python binds a sqlite3 connection to the thread that made it; the recorder opens the bag in
    the caller's thread and writes from its writer thread (never both at once). The schema that
    rosbags created is already committed by ``executescript``.
    """
    conn = getattr(store, 'conn', None)
    path = getattr(store, 'path', None)
    if conn is None or path is None:
        return
    conn.close()
    store.conn = sqlite3.connect(  # type: ignore[attr-defined]
        f'file:{path}', uri=True, check_same_thread=False)
    store.cursor = store.conn.cursor()  # type: ignore[attr-defined]


class EpisodeBagWriter:
    """One rosbag2 written from raw CDR bytes, with bounded crash loss, in the metadata
    version and ``ros_distro`` of ``distro`` (None or '': $ROS_DISTRO, else kilted).

    Not thread-safe: one thread (the recorder's writer thread) owns it, except
    ``set_offered_qos``, which only replaces a list. I/O errors (``OSError`` such as
    ENOSPC/EFBIG) propagate unchanged so the caller can tell a full disk from a bug.
    """

    def __init__(self, path: Path, topics: Sequence[TopicSpec], *, storage: str = 'mcap',
                 distro: str | None = None, flush_policy: FlushPolicy | None = None) -> None:
        if storage not in STORAGES:
            raise BagWriterError(f'unknown storage {storage!r}; supported: {sorted(STORAGES)}')
        names = [t.name for t in topics]
        if len(set(names)) != len(names):
            raise BagWriterError(f'duplicate topics in {names}')
        self.path = Path(path)
        self.topics = list(topics)
        self.storage = storage
        self.distro = bag_format(distro).distro
        self.flush_policy = flush_policy or FlushPolicy()
        self.typestore = get_distro_typestore(self.distro)
        missing = [t.msgtype for t in self.topics if t.msgtype not in self.typestore.fielddefs]
        if missing:
            raise BagWriterError(f'message types unknown to the {self.distro} typestore: {missing}')
        self._mcap: McapBagStore | None = None
        self._sqlite: Writer | None = None
        self._qos: dict[str, list[dict[str, Any]]] = {}
        self._connections: dict[str, Connection] = {}
        self.bytes_written = 0
        self.messages_written = 0
        self._pending_bytes = 0
        self._pending_since_ns: int | None = None
        self._open = False

    @property
    def storage_file(self) -> Path:
        """The .mcap/.db3 file the bag's messages go into."""
        suffix = '.mcap' if self.storage == 'mcap' else '.db3'
        return self.path / f'{self.path.name}{suffix}'

    def open(self) -> None:
        """Create the bag directory and declare every topic (raises if it exists)."""
        try:
            if self.storage == 'mcap':
                self._mcap = McapBagStore(self.path, distro=self.distro,
                                          chunk_bytes=self.flush_policy.chunk_bytes)
                self._mcap.open()
            else:
                self._sqlite = Writer(self.path, version=rosbags_version(self.distro),
                                      storage_plugin=StoragePlugin.SQLITE3)
                self._sqlite.open()
                _rebind_sqlite_connection(self._sqlite.storage)
        except (OSError, WriterError) as exc:
            raise BagWriterError(f'cannot create bag {self.path}: {exc}') from exc
        self._open = True
        if self._mcap is not None:
            for spec in self.topics:
                msgdef, _ = self.typestore.generate_msgdef(spec.msgtype, ros_version=2)
                self._mcap.add_topic(spec.name, spec.msgtype, msgdef,
                                     self.typestore.hash_rihs01(spec.msgtype),
                                     self._qos.get(spec.name))

    def set_offered_qos(self, topic: str, profiles: list[dict[str, Any]]) -> None:
        """The QoS (rosbag2 dicts, see ``topics.qos_dict``) of ``topic``'s publishers."""
        self._qos[topic] = list(profiles)
        if self._mcap is not None and topic in self._mcap.topics:
            self._mcap.set_offered_qos(topic, profiles)

    def set_custom_data(self, key: str, value: str) -> None:
        """Store a string in metadata.yaml ``custom_data`` (written at close)."""
        if self._mcap is not None:
            self._mcap.custom_data[key] = value
        elif self._sqlite is not None:
            self._sqlite.set_custom_data(key, value)

    def _sqlite_connection(self, topic: str) -> Connection:
        conn = self._connections.get(topic)
        if conn is None:
            assert self._sqlite is not None
            spec = next(t for t in self.topics if t.name == topic)
            conn = self._sqlite.add_connection(topic, spec.msgtype, typestore=self.typestore,
                                               offered_qos_profiles=parse_qos(
                                                   self._qos.get(topic, [])))
            self._connections[topic] = conn
        return conn

    def write(self, topic: str, raw: bytes | memoryview, t_ns: int) -> None:
        """Append one serialized message (log time ``t_ns``); may flush per the policy."""
        if not any(t.name == topic for t in self.topics):
            raise BagWriterError(f'topic {topic!r} is not part of this bag: '
                                f'{[t.name for t in self.topics]}')
        if self._mcap is not None:
            self._mcap.write(topic, raw, t_ns)
        else:
            assert self._sqlite is not None
            self._sqlite.write(self._sqlite_connection(topic), t_ns, raw)
        self.bytes_written += len(raw)
        self.messages_written += 1
        self._pending_bytes += len(raw)
        now = time.monotonic_ns()
        if self._pending_since_ns is None:
            self._pending_since_ns = now
        if should_flush(self._pending_bytes, self._pending_since_ns, now, self.flush_policy):
            self.flush()

    def maybe_flush(self) -> None:
        """Flush if pending data got too old (call when idle so a quiet stream is not at risk)."""
        if should_flush(self._pending_bytes, self._pending_since_ns, time.monotonic_ns(),
                        self.flush_policy):
            self.flush()

    def flush(self) -> None:
        """Make everything written so far survive a process kill (not a power cut: no fsync)."""
        if not self._open or self._pending_since_ns is None:
            return
        if self._mcap is not None:
            self._mcap.flush()
        elif self._sqlite is not None and self._sqlite.storage is not None:
            self._sqlite.storage.conn.commit()  # type: ignore[attr-defined]
        self._pending_bytes = 0
        self._pending_since_ns = None

    def close(self) -> None:
        """Write the MCAP summary / commit, then metadata.yaml; ``abort`` on error."""
        if not self._open:
            return
        self._open = False
        try:
            if self._mcap is not None:
                self._mcap.close()
            else:
                assert self._sqlite is not None
                for spec in self.topics:
                    self._sqlite_connection(spec.name)
                self._sqlite.close()
                conform_bag(self.path, self.distro)
        except BaseException:
            self.abort()
            raise

    def abort(self) -> None:
        """Close file handles without summary or metadata.yaml (what is on disk stays)."""
        self._open = False
        try:
            if self._mcap is not None:
                self._mcap.abort()
            elif self._sqlite is not None:
                self._sqlite.abort()
        except OSError:
            pass  # flushing the buffer failed again (disk still full): nothing more to save
