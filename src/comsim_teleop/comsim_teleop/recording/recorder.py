"""Episode recorder: idle → recording → idle, never blocking the DDS callbacks.

``on_message`` only puts ``(topic, bytes, t)`` on a bounded queue; one writer thread owns the bag.
A full queue counts the message as dropped (reported per topic), it is never silently lost.
A failed write (ENOSPC, EFBIG, any ``OSError``) stops the writer thread, closes the bag as well as
the disk allows, marks ``episode.yaml`` ``status: failed`` and surfaces the error from the next
``stop()`` (and from ``status()`` at once). Each episode is its own directory, so earlier episodes
are never touched.

Free-space ballast: a small ``.reserve`` file is written at start and deleted after a failure, so
the sidecar can still be rewritten on a full disk.

``success`` in ``episode.yaml`` is true only for an episode that closed ``complete`` with the
operator's success: a failed write turns it false (the operator's verdict stays in
``operator_success``), so a broken bag never passes as a good demonstration.

Latched topics (``set_latched``: a transient-local publisher such as ``/robot_description`` or
``/tf_static`` sends once, long before any episode) keep their last messages, and every episode
starts with them, stamped at its start: each bag is complete on its own.

``on_change`` (if given) is called after every state change and on a write failure, from the
thread where it happened: the node publishes its status from there.
"""

from __future__ import annotations

import logging
import queue
import shutil
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from comsim_core.episodes.distro import bag_format
from comsim_core.episodes.sidecar import SIDECAR_FORMAT, dump_yaml, write_sidecar
from comsim_core.episodes.stats import (
    EpisodeSummary,
    StreamStats,
    rate_warnings,
    stream_stats,
    window_rate,
)
from comsim_core.episodes.writer import EpisodeBagWriter, FlushPolicy

from .errors import BagWriteError, RecorderError
from .naming import next_episode_dir

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from comsim_core.episodes.topics import TopicSpec

log = logging.getLogger(__name__)

BALLAST_NAME = '.reserve'
_STOP = object()


@dataclass(frozen=True)
class RecorderStatus:
    """Snapshot for the node's status topic / logs."""

    state: str
    episode_dir: Path | None
    elapsed_s: float
    counts: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)
    queue_depth: int = 0
    bytes_written: int = 0
    error: str | None = None


def recorded_success(status: str, operator_success: bool | None) -> bool | None:
    """``success`` for episode.yaml: the operator's verdict only when the episode is complete."""
    if status == 'complete':
        return operator_success
    return False if operator_success else operator_success


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec='milliseconds')


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob('*') if p.is_file())


class EpisodeRecorder:
    """Records episodes of the given topics under ``output_dir``, one directory per episode."""

    def __init__(self, output_dir: Path | str, topics: Sequence[TopicSpec], storage: str = 'mcap',
                 distro: str | None = None, queue_size: int = 1024,
                 min_free_bytes: int = 1 << 30, flush_policy: FlushPolicy | None = None,
                 ballast_bytes: int = 256 * 1024,
                 on_change: Callable[[], None] | None = None) -> None:
        if not topics:
            raise RecorderError('no topics to record')
        if queue_size < 1:
            raise RecorderError(f'queue_size must be >= 1, got {queue_size}')
        self.output_dir = Path(output_dir)
        self.topics = {t.name: t for t in topics}
        self.storage = storage
        self.distro = bag_format(distro).distro  # None/'': $ROS_DISTRO, else kilted
        self.queue_size = queue_size
        self.min_free_bytes = min_free_bytes
        self.flush_policy = flush_policy or FlushPolicy()
        self.ballast_bytes = ballast_bytes
        self.on_change = on_change
        self._qos: dict[str, list[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self._state = 'idle'
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=queue_size)
        self._thread: threading.Thread | None = None
        self._writer: EpisodeBagWriter | None = None
        self._episode_dir: Path | None = None
        self._last_dir: Path | None = None
        self._metadata: dict[str, Any] = {}
        self._sidecar: dict[str, Any] = {}
        self._times: dict[str, list[int]] = defaultdict(list)
        self._dropped: dict[str, int] = defaultdict(int)
        self._recent: dict[str, deque[int]] = {}
        self._reported_drops: dict[str, int] = {}
        self._error: BaseException | None = None
        self._discarding = False
        self._started_mono = 0.0
        self._started_ns: int | None = None
        self._latched: dict[str, deque[bytes]] = {}

    # ----------------------------------------------------------------- state machine
    @property
    def state(self) -> str:
        """'idle' or 'recording'."""
        return self._state

    def start(self, metadata: dict[str, Any] | None = None, t_ns: int | None = None) -> Path:
        """Open a new episode directory and start the writer thread; returns the directory.
        ``t_ns``: the start on the messages' clock (the node's, sim time included), the stamp of
        the latched messages written first; default: the wall clock."""
        if self._state != 'idle':
            raise RecorderError(f'cannot start: already recording {self._episode_dir}')
        metadata = dict(metadata or {})
        self.output_dir.mkdir(parents=True, exist_ok=True)
        free = shutil.disk_usage(self.output_dir).free
        if free < self.min_free_bytes:
            raise RecorderError(
                f'not enough free disk space in {self.output_dir}: {free / 1e6:.1f} MB free, '
                f'min_free_bytes requires {self.min_free_bytes / 1e6:.1f} MB')
        path = next_episode_dir(self.output_dir, str(metadata.get('task', 'untitled')))
        writer = EpisodeBagWriter(path, list(self.topics.values()), storage=self.storage,
                                  distro=self.distro, flush_policy=self.flush_policy)
        for topic, profiles in self._qos.items():
            writer.set_offered_qos(topic, profiles)
        writer.open()
        try:
            writer.set_custom_data('comsim.metadata', dump_yaml(metadata))
            (path / BALLAST_NAME).write_bytes(b'\0' * self.ballast_bytes)
            self._sidecar = {
                'format': SIDECAR_FORMAT,
                'episode': path.name,
                'status': 'recording',
                'started_at': _now_iso(),
                'storage': self.storage,
                'distro': self.distro,
                'bag_file': writer.storage_file.name,
                'topics': [{'name': t.name, 'msgtype': t.msgtype,
                            'expected_rate_hz': t.expected_rate_hz} for t in self.topics.values()],
                'metadata': metadata,
            }
            write_sidecar(path, self._sidecar)
        except BaseException:
            writer.abort()
            shutil.rmtree(path, ignore_errors=True)
            raise
        self._reset_episode(path, writer, metadata)
        self._thread = threading.Thread(target=self._run, name=f'recorder:{path.name}',
                                        daemon=True)
        self._thread.start()
        self._state = 'recording'
        stamp = time.time_ns() if t_ns is None else int(t_ns)
        with self._lock:
            latched = [(topic, raw) for topic, kept in self._latched.items() for raw in kept]
        for topic, raw in latched:
            self._enqueue(topic, raw, stamp)
        log.info('recording %s', path)
        self._changed()
        return path

    def set_latched(self, topic: str, keep: int = 1) -> None:
        """``topic``'s publishers are transient local: keep its last ``keep`` messages (one
        per publisher) for the start of every episode."""
        with self._lock:
            self._latched[topic] = deque(self._latched.get(topic, ()), maxlen=max(1, keep))

    def set_offered_qos(self, topic: str, profiles: list[dict[str, Any]]) -> None:
        """QoS of ``topic``'s publishers (``topics.qos_dict``), recorded in the bag's metadata."""
        self._qos[topic] = list(profiles)
        if self._writer is not None and self._state == 'recording':
            self._writer.set_offered_qos(topic, profiles)

    def on_message(self, topic: str, raw: bytes | memoryview, t_ns: int) -> None:
        """Enqueue one serialized message; never blocks (counts a drop when the queue is full)."""
        if topic in self._latched:
            with self._lock:
                self._latched[topic].append(bytes(raw))
        self._enqueue(topic, raw, t_ns)

    def _enqueue(self, topic: str, raw: bytes | memoryview, t_ns: int) -> None:
        if self._state != 'recording' or topic not in self.topics:
            return
        with self._lock:
            if self._started_ns is None:
                self._started_ns = t_ns
            self._recent[topic].append(t_ns)
            if self._error is not None or self._discarding:
                self._dropped[topic] += 1
                return
            try:
                self._queue.put_nowait((topic, raw, t_ns))
            except queue.Full:
                self._dropped[topic] += 1

    def stop(self, success: bool, notes: str = '') -> EpisodeSummary:
        """Finish the episode; raises ``BagWriteError`` if the bag could not be written."""
        if self._state != 'recording':
            raise RecorderError('cannot stop: not recording')
        return self._finish('complete', success, notes, raise_on_failure=True)

    def close(self) -> EpisodeSummary | None:
        """Shutdown path (Ctrl-C): finish a running episode as 'interrupted'; never raises I/O."""
        if self._state != 'recording':
            return None
        return self._finish('interrupted', None, 'recorder closed during recording',
                            raise_on_failure=False)

    def discard(self) -> Path | None:
        """Delete the running episode (or, when idle, the last finished one); returns its path."""
        if self._state == 'recording':
            self._discarding = True
            self._join_writer()
            assert self._writer is not None
            self._writer.abort()
            path = self._episode_dir
            self._state = 'idle'
        else:
            path = self._last_dir
        self._last_dir = None
        if path is None or not path.exists():
            log.warning('discard: no episode to discard')
            return None
        shutil.rmtree(path)
        log.warning('discarded episode %s', path)
        self._changed()
        return path

    def rerecord(self, t_ns: int | None = None) -> Path:
        """Discard the current/last episode and start again with the same metadata."""
        metadata = dict(self._metadata)
        self.discard()
        return self.start(metadata, t_ns)

    # ----------------------------------------------------------------- monitoring
    def status(self) -> RecorderStatus:
        """Current state, counts, drops, queue depth and any write error."""
        elapsed = time.monotonic() - self._started_mono if self._state == 'recording' else 0.0
        with self._lock:
            dropped = dict(self._dropped)
        return RecorderStatus(
            state=self._state, episode_dir=self._episode_dir, elapsed_s=elapsed,
            counts={k: len(v) for k, v in self._times.items()}, dropped=dropped,
            queue_depth=self._queue.qsize(),
            bytes_written=self._writer.bytes_written if self._writer else 0,
            error=None if self._error is None else f'{type(self._error).__name__}: {self._error}')

    def rates(self, now_ns: int) -> dict[str, float]:
        """Per topic, messages per second received over the last second (0 when idle)."""
        if self._state != 'recording':
            return {k: 0.0 for k in self.topics}
        with self._lock:
            recent = {k: list(v) for k, v in self._recent.items()}
        return {k: window_rate(recent.get(k, ()), now_ns) for k in self.topics}

    def rate_warnings(self, now_ns: int) -> list[str]:
        """Streams under 90 % of their expected rate over the last second, new drops, failure."""
        if self._state != 'recording':
            return []
        with self._lock:
            if self._started_ns is None:
                self._started_ns = now_ns
            recent = {k: list(v) for k, v in self._recent.items()}
            dropped = dict(self._dropped)
        out = rate_warnings(recent, {k: t.expected_rate_hz for k, t in self.topics.items()},
                            now_ns, self._started_ns)
        for topic, n in dropped.items():
            new = n - self._reported_drops.get(topic, 0)
            if new > 0:
                out.append(f'{topic}: {new} messages dropped (writer queue full)')
            self._reported_drops[topic] = n
        if self._error is not None:
            out.append(f'recording failed: {self._error}')
        return out

    # ----------------------------------------------------------------- internals
    def _changed(self) -> None:
        if self.on_change is not None:
            try:
                self.on_change()
            except Exception:  # noqa: BLE001 - a status listener never breaks recording
                log.exception('recorder on_change listener failed')

    def _reset_episode(self, path: Path, writer: EpisodeBagWriter,
                       metadata: dict[str, Any]) -> None:
        self._episode_dir = path
        self._last_dir = None
        self._writer = writer
        self._metadata = metadata
        self._times = defaultdict(list)
        self._dropped = defaultdict(int)
        self._recent = {k: deque(maxlen=int(4 * (t.expected_rate_hz or 100)) + 64)
                        for k, t in self.topics.items()}
        self._reported_drops = {}
        self._error = None
        self._discarding = False
        self._queue = queue.Queue(maxsize=self.queue_size)
        self._started_mono = time.monotonic()
        self._started_ns = None

    def _run(self) -> None:
        """Writer thread: drain the queue into the bag until told to stop or a write fails."""
        writer = self._writer
        assert writer is not None
        while True:
            try:
                item = self._queue.get(timeout=0.2)
            except queue.Empty:
                try:
                    writer.maybe_flush()
                except OSError as exc:
                    self._fail(exc)
                    return
                continue
            if item is _STOP:
                return
            if self._discarding:
                continue
            topic, raw, t_ns = item
            try:
                writer.write(topic, raw, t_ns)
            except Exception as exc:  # noqa: BLE001 - any failure ends the episode as failed
                self._fail(exc)
                return
            self._times[topic].append(t_ns)

    def _fail(self, exc: BaseException) -> None:
        """Writer-thread side of a failed write: close best-effort, free ballast, mark failed."""
        log.error('recording %s failed: %s', self._episode_dir, exc)
        with self._lock:
            self._error = exc
        assert self._writer is not None and self._episode_dir is not None
        try:
            self._writer.close()
        except Exception as close_exc:  # noqa: BLE001
            log.error('closing %s after failure also failed: %s', self._episode_dir, close_exc)
        self._free_ballast()
        self._write_sidecar_best_effort(status='failed', success=False,
                                        error=self._error_text(),
                                        hint=f'try: comsim-recover {self._episode_dir}')
        self._drain_as_dropped()
        self._changed()

    def _error_text(self) -> str | None:
        return None if self._error is None else f'{type(self._error).__name__}: {self._error}'

    def _free_ballast(self) -> None:
        if self._episode_dir is not None:
            (self._episode_dir / BALLAST_NAME).unlink(missing_ok=True)

    def _write_sidecar_best_effort(self, **changes: Any) -> None:
        assert self._episode_dir is not None
        self._sidecar.update(changes)
        try:
            write_sidecar(self._episode_dir, self._sidecar)
        except OSError as exc:
            log.error('cannot update %s/episode.yaml: %s', self._episode_dir, exc)

    def _join_writer(self) -> None:
        """Stop the writer thread after it drained the queue (or died)."""
        thread = self._thread
        if thread is None:
            return
        while thread.is_alive():
            try:
                self._queue.put(_STOP, timeout=0.1)
                break
            except queue.Full:
                continue
        thread.join()
        self._thread = None
        self._drain_as_dropped()

    def _drain_as_dropped(self) -> None:
        """Count what a dead writer left in the queue: received, but never written."""
        with self._lock:
            while True:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is not _STOP:
                    self._dropped[item[0]] += 1

    def _summary(self, status: str, success: bool | None) -> EpisodeSummary:
        assert self._episode_dir is not None and self._writer is not None
        streams: dict[str, StreamStats] = {
            name: stream_stats(name, spec.msgtype, self._times.get(name, []),
                               spec.expected_rate_hz, self._dropped.get(name, 0))
            for name, spec in self.topics.items()}
        firsts = [s.first_ns for s in streams.values() if s.first_ns is not None]
        lasts = [s.last_ns for s in streams.values() if s.last_ns is not None]
        duration = (max(lasts) - min(firsts)) / 1e9 if firsts else 0.0
        return EpisodeSummary(str(self._episode_dir), status, success, duration,
                              self._writer.bytes_written, _dir_bytes(self._episode_dir), streams,
                              self._error_text())

    def _finish(self, status: str, success: bool | None, notes: str,
                raise_on_failure: bool) -> EpisodeSummary:
        self._join_writer()
        writer, path = self._writer, self._episode_dir
        assert writer is not None and path is not None
        if self._error is None:
            pre = self._summary(status, success)
            try:
                writer.set_custom_data('comsim.summary', dump_yaml(pre.to_dict()))
                writer.close()
            except OSError as exc:
                self._fail(exc)
        self._free_ballast()
        final_status = 'failed' if self._error is not None else status
        verdict = recorded_success(final_status, success)
        summary = self._summary(final_status, verdict)
        self._write_sidecar_best_effort(status=final_status, success=verdict,
                                        operator_success=success, notes=notes,
                                        stopped_at=_now_iso(), error=self._error_text(),
                                        summary=summary.to_dict())
        self._state = 'idle'
        self._last_dir = path
        self._changed()
        log.info('episode %s %s: %s', path.name, final_status,
                 {k: v.count for k, v in summary.streams.items()})
        if self._error is not None and raise_on_failure:
            raise BagWriteError(f'episode {path} failed: {self._error_text()}; '
                                f'earlier episodes are intact') from self._error
        return summary

