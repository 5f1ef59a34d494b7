"""Write one episode as a standard rosbag2 directory from already-serialized CDR bytes.

Layout (readable by ``ros2 bag info``, Foxglove, ``rosbags``): the episode directory *is* the bag
directory: ``<episode>/<episode>.mcap`` (or ``.db3``) plus ``metadata.yaml`` (written at close) and
our ``episode.yaml`` sidecar, which rosbag2 ignores.

Crash exposure, and why this module closes chunks itself:

* rosbags' MCAP writer keeps the open chunk in memory and writes it only once it exceeds 1 MiB
  (``2**20``, hard-coded in ``McapWriter.write``; no public option). Schemas and channels also
  live in that first chunk. A kill therefore loses the open chunk: up to 1 MiB, which at a
  low-rate stream (joint states only) can be minutes of data.
* rosbags' sqlite3 writer keeps one transaction open until ``close()``; a kill rolls it back and
  leaves **zero** messages.

``FlushPolicy`` bounds both: after a write, if the pending data exceeds ``chunk_bytes`` or is older
than ``max_age_s``, the MCAP chunk is closed (via rosbags' ``McapWriter.close_chunk``, the same
call its own 1 MiB rule makes) and the file buffer flushed to the OS; for sqlite3 the transaction
is committed. This uses rosbags internals, checked at open; if they are missing (another rosbags
version) we fall back to rosbags' own behaviour and say so in ``chunk_control``.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rosbags.rosbag2 import StoragePlugin, Writer, WriterError
from rosbags.typesys import Stores, get_typestore

from .errors import RecorderError
from .topics import TopicSpec

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rosbags.interfaces import Connection
    from rosbags.typesys.store import Typestore

DISTROS: dict[str, Stores] = {
    'kilted': Stores.ROS2_KILTED,
    'jazzy': Stores.ROS2_JAZZY,
    'humble': Stores.ROS2_HUMBLE,
}
STORAGES: dict[str, StoragePlugin] = {'mcap': StoragePlugin.MCAP, 'sqlite3': StoragePlugin.SQLITE3}
ROSBAGS_MCAP_CHUNK_BYTES = 2**20


@dataclass(frozen=True)
class FlushPolicy:
    """When to make pending data crash-safe (closed MCAP chunk / committed sqlite3 transaction).

    Smaller values lose less on a crash but cost index entries (MCAP: one chunk index record and
    one message index per channel per chunk) and syscalls. ``chunk_bytes`` above 1 MiB has no
    effect for MCAP because rosbags closes chunks at 1 MiB anyway.
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


def get_distro_typestore(distro: str) -> Typestore:
    """The rosbags typestore for a ROS 2 distro name (kilted, jazzy, humble)."""
    try:
        return get_typestore(DISTROS[distro])
    except KeyError:
        raise RecorderError(f'unknown distro {distro!r}; supported: {sorted(DISTROS)}') from None


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
    store.conn = sqlite3.connect(f'file:{path}', uri=True, check_same_thread=False)  # type: ignore[attr-defined]
    store.cursor = store.conn.cursor()  # type: ignore[attr-defined]


class EpisodeBagWriter:
    """One rosbag2 (version 9) written from raw CDR bytes, with bounded crash loss.

    Not thread-safe: one thread (the recorder's writer thread) owns it. I/O errors (``OSError``
    such as ENOSPC/EFBIG) propagate unchanged so the caller can tell a full disk from a bug.
    """

    def __init__(self, path: Path, topics: Sequence[TopicSpec], *, storage: str = 'mcap',
                 distro: str = 'kilted', flush_policy: FlushPolicy | None = None) -> None:
        if storage not in STORAGES:
            raise RecorderError(f'unknown storage {storage!r}; supported: {sorted(STORAGES)}')
        names = [t.name for t in topics]
        if len(set(names)) != len(names):
            raise RecorderError(f'duplicate topics in {names}')
        self.path = Path(path)
        self.topics = list(topics)
        self.storage = storage
        self.distro = distro
        self.flush_policy = flush_policy or FlushPolicy()
        self.typestore = get_distro_typestore(distro)
        missing = [t.msgtype for t in self.topics if t.msgtype not in self.typestore.fielddefs]
        if missing:
            raise RecorderError(f'message types unknown to the {distro} typestore: {missing}')
        try:
            self._writer = Writer(self.path, version=9, storage_plugin=STORAGES[storage])
        except WriterError as exc:
            raise RecorderError(f'cannot create bag {self.path}: {exc}') from exc
        self._connections: dict[str, Connection] = {}
        self.chunk_control = False
        self.bytes_written = 0
        self.messages_written = 0
        self._pending_bytes = 0
        self._pending_since_ns: int | None = None
        self._open = False

    @property
    def storage_file(self) -> Path:
        """The .mcap/.db3 file rosbags writes into."""
        suffix = '.mcap' if self.storage == 'mcap' else '.db3'
        return self.path / f'{self.path.name}{suffix}'

    def open(self) -> None:
        """Create the bag directory and register every topic (raises if it exists)."""
        try:
            self._writer.open()
        except Exception as exc:
            raise RecorderError(f'cannot create bag {self.path}: {exc}') from exc
        self._open = True
        if self.storage == 'sqlite3':
            _rebind_sqlite_connection(self._writer.storage)
        for spec in self.topics:
            self._connections[spec.name] = self._writer.add_connection(
                spec.name, spec.msgtype, typestore=self.typestore)
        store = self._writer.storage
        if self.storage == 'mcap':
            self.chunk_control = all(hasattr(store, a) for a in ('close_chunk', 'chunk', 'bio'))
        else:
            self.chunk_control = hasattr(store, 'conn')

    def set_custom_data(self, key: str, value: str) -> None:
        """Store a string in metadata.yaml ``custom_data`` (written at close)."""
        self._writer.set_custom_data(key, value)

    def write(self, topic: str, raw: bytes | memoryview, t_ns: int) -> None:
        """Append one serialized message (log time ``t_ns``); may flush per the policy."""
        conn = self._connections.get(topic)
        if conn is None:
            raise RecorderError(f'topic {topic!r} is not part of this bag: '
                                f'{list(self._connections)}')
        self._writer.write(conn, t_ns, raw)
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
        store = self._writer.storage
        if store is None or not self.chunk_control or self._pending_since_ns is None:
            return
        if self.storage == 'mcap':
            if store.chunk.msgs:  # never emit a chunk without messages
                store.close_chunk()
            store.bio.flush()
        else:
            store.conn.commit()
        self._pending_bytes = 0
        self._pending_since_ns = None

    def close(self) -> None:
        """Write the MCAP summary / commit, then metadata.yaml. Falls back to ``abort`` on error."""
        if not self._open:
            return
        self._open = False
        try:
            self._writer.close()
        except BaseException:
            self.abort()
            raise

    def abort(self) -> None:
        """Close file handles without summary or metadata.yaml (what is on disk stays)."""
        self._open = False
        try:
            self._writer.abort()
        except OSError:
            pass  # flushing the buffer failed again (disk still full): nothing more to save
