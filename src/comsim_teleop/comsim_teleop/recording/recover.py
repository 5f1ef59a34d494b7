"""Rebuild a readable rosbag2 from an episode whose recorder was killed.

After SIGKILL an MCAP bag has no summary section and no ``metadata.yaml``, so rosbags cannot
open it (and ``ros2 bag reindex`` does not rebuild MCAP, rosbag2 issue 2003). ``mcap_salvage``
walks the records front to back: complete chunks are CRC-checked (a damaged one is skipped and
reported), and every complete message record of the unfinished last chunk is kept too.

sqlite3: rosbags' writer commits only at close, so a killed plain rosbags bag holds **zero**
messages (the open transaction is rolled back from the journal). ``EpisodeBagWriter`` commits per
``FlushPolicy``, so everything up to the last commit is kept and recovered here.

Nothing is overwritten that was not backed up first: a file that is not MCAP / sqlite3 is
refused before anything changes; the original storage file and any ``metadata.yaml`` are
renamed to ``*.orig`` (never deleted) only once the rebuilt bag is complete. The rebuilt MCAP is
written by ``McapBagStore`` (CRCs on, the channels' QoS kept).

A recovered episode never counts as a successful demonstration: ``success`` becomes false (the
operator's verdict is kept as ``operator_success``) until a person confirms it with
``comsim-recover --confirm-success NAME EPISODE`` (see ``sidecar.confirm_success``).
"""

from __future__ import annotations

import mmap
import shutil
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from mcap.records import Channel, Message, Schema
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.rosbag2.metadata import parse_qos
from rosbags.typesys import Stores, get_typestore
from rosbags.typesys.msg import get_types_from_msg

from comsim_core.episodes.distro import conform_bag, rosbags_version
from comsim_core.episodes.mcap_store import McapBagStore
from comsim_core.episodes.sidecar import dump_yaml, read_sidecar, update_sidecar

from .errors import RecoveryError
from .mcap_salvage import MCAP_MAGIC, SalvageLog, is_mcap, salvage

SQLITE_MAGIC = b'SQLite format 3\x00'


@dataclass(frozen=True)
class TopicDef:
    """What a rebuilt connection needs."""

    topic: str
    msgtype: str
    msgdef: str
    rihs01: str
    offered_qos: tuple[dict[str, Any], ...] = ()


@dataclass
class RecoveryReport:
    """What ``recover_episode`` did."""

    episode_dir: Path
    storage: str
    status: str  # 'recovered' | 'readable' (nothing to do)
    messages: dict[str, int] = field(default_factory=dict)
    original: Path | None = None
    stopped_reason: str | None = None  # why reading the original ended early, if it did
    damaged: list[str] = field(default_factory=list)  # chunks skipped for a CRC mismatch
    from_unfinished_chunk: int = 0  # messages salvaged from a chunk cut off mid-write
    backups: list[Path] = field(default_factory=list)

    @property
    def total(self) -> int:
        """Messages in the rebuilt bag."""
        return sum(self.messages.values())


def is_readable(episode_dir: Path) -> bool:
    """Whether rosbags can open the bag and read its index (metadata.yaml present)."""
    from rosbags.highlevel import AnyReader  # noqa: PLC0415

    if not (episode_dir / 'metadata.yaml').exists():
        return False
    if any(episode_dir.glob('*.db3-journal')) or any(episode_dir.glob('*.db3-wal')):
        return False  # not closed cleanly; opening it would roll the journal back in place
    try:
        with AnyReader([episode_dir], default_typestore=get_typestore(Stores.ROS2_KILTED)):
            return True
    except Exception:  # noqa: BLE001 - any failure means "needs recovery"
        return False


def storage_file(episode_dir: Path) -> Path:
    """The episode's .mcap/.db3 (ignoring .orig backups); RecoveryError when there is none."""
    files = sorted([*episode_dir.glob('*.mcap'), *episode_dir.glob('*.db3')])
    if not files:
        raise RecoveryError(f'{episode_dir}: no .mcap or .db3 file to recover')
    if len(files) > 1:
        raise RecoveryError(f'{episode_dir}: several storage files {[f.name for f in files]}')
    return files[0]


def check_format(src: Path) -> None:
    """RecoveryError unless ``src`` starts like the MCAP / sqlite3 file its suffix promises."""
    with src.open('rb') as fh:
        head = fh.read(16)
    if not head:
        raise RecoveryError(f'{src}: empty file (the recorder stopped before its first '
                            f'flush): nothing to recover; nothing was changed')
    if src.suffix == '.mcap' and not is_mcap(head):
        raise RecoveryError(f'{src}: not an MCAP file (starts with {head[:8]!r}, expected '
                            f'{MCAP_MAGIC!r}); nothing was changed')
    if src.suffix == '.db3' and head != SQLITE_MAGIC:
        raise RecoveryError(f'{src}: not a sqlite3 database (starts with {head[:8]!r}); '
                            f'nothing was changed')


def _rihs01(msgtype: str, msgdef: str) -> str:
    """Type hash from the stored definition (falls back to the Kilted typestore)."""
    try:
        store = get_typestore(Stores.EMPTY)
        store.register(get_types_from_msg(msgdef, msgtype))
        return store.hash_rihs01(msgtype)
    except Exception:  # noqa: BLE001 - IDL or odd definitions: use the distro's hash
        return get_typestore(Stores.ROS2_KILTED).hash_rihs01(msgtype)


def _channel_qos(channel: Channel) -> tuple[dict[str, Any], ...]:
    """The channel's ``offered_qos_profiles`` (YAML text) as dicts; () when absent or odd."""
    try:
        loaded = yaml.safe_load(channel.metadata.get('offered_qos_profiles') or '[]')
    except yaml.YAMLError:
        return ()
    return tuple(q for q in loaded if isinstance(q, dict)) if isinstance(loaded, list) else ()


def read_mcap_tolerant(path: Path, report: RecoveryReport
                       ) -> Iterator[tuple[TopicDef, int, bytes]]:
    """Every complete message of ``path`` (see ``mcap_salvage``), with its topic definition."""
    schemas: dict[int, Schema] = {}
    channels: dict[int, TopicDef] = {}
    log = SalvageLog()
    with path.open('rb') as fh:
        buf = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if fh.seek(0, 2) else b''
    try:
        for rec in salvage(buf, log):
            if isinstance(rec, Schema):
                schemas[rec.id] = rec
            elif isinstance(rec, Channel):
                schema = schemas[rec.schema_id]
                msgdef = schema.data.decode()
                channels[rec.id] = TopicDef(rec.topic, schema.name, msgdef,
                                            _rihs01(schema.name, msgdef), _channel_qos(rec))
            elif isinstance(rec, Message) and rec.channel_id in channels:
                yield channels[rec.channel_id], rec.log_time, bytes(rec.data)
    finally:
        try:
            if isinstance(buf, mmap.mmap):
                buf.close()
        except BufferError:
            pass  # a record view still alive (an exception's traceback): freed with it
    report.damaged = list(log.bad_chunks)
    report.from_unfinished_chunk = log.partial_chunk_messages
    report.stopped_reason = log.truncated


def read_sqlite_tolerant(path: Path, report: RecoveryReport
                         ) -> Iterator[tuple[TopicDef, int, bytes]]:
    """Committed messages of a rosbag2 sqlite3 file (an open transaction is rolled back)."""
    conn = sqlite3.connect(f'file:{path}', uri=True)
    try:
        defs = {r[0]: r[1] for r in conn.execute(
            'SELECT topic_type, encoded_message_definition FROM message_definitions')}
        topics = {tid: TopicDef(name, typ, defs.get(typ, ''),
                                digest or _rihs01(typ, defs.get(typ, '')))
                  for tid, name, typ, digest in conn.execute(
                      'SELECT id, name, type, type_description_hash FROM topics')}
        for tid, t, data in conn.execute(
                'SELECT topic_id, timestamp, data FROM messages ORDER BY id'):
            yield topics[tid], t, data
    except sqlite3.DatabaseError as exc:
        report.stopped_reason = f'{type(exc).__name__}: {exc}'
    finally:
        conn.close()


def _backup_name(path: Path) -> Path:
    candidate = path.with_name(path.name + '.orig')
    n = 1
    while candidate.exists():
        candidate = path.with_name(f'{path.name}.orig.{n}')
        n += 1
    return candidate


def _back_up(path: Path, report: RecoveryReport) -> Path:
    backup = _backup_name(path)
    path.rename(backup)
    report.backups.append(backup)
    return backup


def recover_episode(episode_dir: Path | str, *, force: bool = False) -> RecoveryReport:
    """Rebuild ``episode_dir`` into a readable rosbag2, keeping the originals as ``*.orig``.

    A bag that rosbags can already open is left alone (``status='readable'``) unless ``force``.
    RecoveryError (nothing changed) when the file is not the format its name says.
    """
    episode_dir = Path(episode_dir)
    if not episode_dir.is_dir():
        raise RecoveryError(f'{episode_dir}: not a directory')
    src = storage_file(episode_dir)
    storage = 'mcap' if src.suffix == '.mcap' else 'sqlite3'
    report = RecoveryReport(episode_dir, storage, 'readable')
    check_format(src)
    if not force and is_readable(episode_dir):
        return report

    work = episode_dir.parent / f'.{episode_dir.name}.recovering'
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    try:
        bag = work / episode_dir.name
        sidecar = read_sidecar(episode_dir)
        if storage == 'mcap':
            _rebuild_mcap(src, bag, report, sidecar)
        else:
            _rebuild_sqlite(src, bag, report, sidecar)
        _install(bag, src, episode_dir, storage, report)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report.status = 'recovered'
    _mark_recovered(episode_dir, sidecar, report)
    return report


def _install(bag: Path, src: Path, episode_dir: Path, storage: str,
             report: RecoveryReport) -> None:
    """Move the originals aside (``*.orig``) and the rebuilt bag in; on any failure put the
    originals back, so the episode is never left without its storage file."""
    moved: list[tuple[Path, Path]] = []   # (original, its backup)
    placed: list[Path] = []
    try:
        for original in (src, src.with_name(src.name + '-journal'),
                         src.with_name(src.name + '-wal'), episode_dir / 'metadata.yaml'):
            if original.exists():
                moved.append((original, _back_up(original, report)))
        report.original = moved[0][1]
        new_file = next(bag.glob('*.mcap' if storage == 'mcap' else '*.db3'))
        placed.append(new_file.rename(episode_dir / new_file.name))
        placed.append((bag / 'metadata.yaml').rename(episode_dir / 'metadata.yaml'))
    except BaseException:
        for path in placed:
            path.unlink(missing_ok=True)
        for original, backup in reversed(moved):
            backup.rename(original)
        report.backups.clear()
        report.original = None
        raise


def _mark_recovered(episode_dir: Path, sidecar: dict[str, Any] | None,
                    report: RecoveryReport) -> None:
    """Sidecar: status recovered, success false (the operator's verdict kept aside)."""
    side = sidecar or {}
    changes: dict[str, Any] = {'status': 'recovered', 'success': False, 'recovery': {
        'messages': report.messages, 'total': report.total,
        'original': report.original.name if report.original else None,
        'backups': [p.name for p in report.backups],
        'stopped_reason': report.stopped_reason, 'damaged': report.damaged,
        'from_unfinished_chunk': report.from_unfinished_chunk}}
    if 'operator_success' not in side and side.get('success') is not None:
        changes['operator_success'] = side['success']
    for key in ('success_confirmed_by', 'success_confirmed_at'):
        if key in side:
            changes[key] = None  # a confirmation was for the bag before this rebuild
    update_sidecar(episode_dir, **changes)


def _rebuild_mcap(src: Path, bag: Path, report: RecoveryReport,
                  sidecar: dict[str, Any] | None) -> None:
    store = McapBagStore(bag, distro=str((sidecar or {}).get('distro') or 'kilted'),
                         chunk_bytes=4 * 2**20)
    store.open()
    try:
        for tdef, t, data in read_mcap_tolerant(src, report):
            if tdef.topic not in store.topics:
                store.add_topic(tdef.topic, tdef.msgtype, tdef.msgdef, tdef.rihs01,
                                list(tdef.offered_qos))
                report.messages.setdefault(tdef.topic, 0)
            store.write(tdef.topic, data, t)
            report.messages[tdef.topic] += 1
        _custom_data(sidecar, src, report, store.custom_data.__setitem__)
        store.close()
    except BaseException:
        store.abort()
        raise


def _rebuild_sqlite(src: Path, bag: Path, report: RecoveryReport,
                    sidecar: dict[str, Any] | None) -> None:
    # Opening a database with a hot journal rolls it back in place: read a copy, so the
    # original (and its journal) stay as they were until they are backed up.
    copy_dir = bag.parent / 'original'
    copy_dir.mkdir()
    for part in (src, src.with_name(src.name + '-journal'), src.with_name(src.name + '-wal')):
        if part.exists():
            shutil.copy2(part, copy_dir / part.name)
    src = copy_dir / src.name
    distro = str((sidecar or {}).get('distro') or 'kilted')
    writer = Writer(bag, version=rosbags_version(distro), storage_plugin=StoragePlugin.SQLITE3)
    writer.open()
    try:
        conns: dict[tuple[str, str], Any] = {}
        for tdef, t, data in read_sqlite_tolerant(src, report):
            key = (tdef.topic, tdef.msgtype)
            if key not in conns:
                conns[key] = writer.add_connection(
                    tdef.topic, tdef.msgtype, msgdef=tdef.msgdef, rihs01=tdef.rihs01,
                    offered_qos_profiles=parse_qos(list(tdef.offered_qos)))
                report.messages.setdefault(tdef.topic, 0)
            writer.write(conns[key], t, data)
            report.messages[tdef.topic] += 1
        _custom_data(sidecar, src, report, writer.set_custom_data)
        writer.close()
        conform_bag(bag, distro)
    except BaseException:
        writer.abort()
        raise


def _custom_data(sidecar: dict[str, Any] | None, src: Path, report: RecoveryReport,
                 put: Any) -> None:
    if sidecar and 'metadata' in sidecar:
        put('comsim.metadata', dump_yaml(sidecar['metadata']))
    put('comsim.recovered', f'from {src.name}: {report.stopped_reason}')
