"""Rebuild a readable rosbag2 from an episode whose recorder was killed.

After SIGKILL an MCAP bag has no summary section and no ``metadata.yaml``, so rosbags cannot
open it (and ``ros2 bag reindex`` does not rebuild MCAP, rosbag2 issue 2003). ``mcap``'s
``StreamReader`` reads records front to back; a chunk is only yielded once it was read whole,
so every message of every complete chunk survives and the partial tail is dropped.

sqlite3: rosbags' writer commits only at close, so a killed plain rosbags bag holds **zero**
messages (the open transaction is rolled back from the journal). ``EpisodeBagWriter`` commits per
``FlushPolicy``, so everything up to the last commit is kept and recovered here.

The original storage file is renamed to ``*.orig`` (never deleted); the rebuilt bag is written
with rosbags' writer next to it, so the result is a standard rosbag2 directory.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcap.records import Channel, Message, Schema
from mcap.stream_reader import StreamReader
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore
from rosbags.typesys.msg import get_types_from_msg

from .errors import RecoveryError
from .sidecar import dump_yaml, read_sidecar, update_sidecar


@dataclass(frozen=True)
class TopicDef:
    """What a rebuilt connection needs."""

    topic: str
    msgtype: str
    msgdef: str
    rihs01: str


@dataclass
class RecoveryReport:
    """What ``recover_episode`` did."""

    episode_dir: Path
    storage: str
    status: str  # 'recovered' | 'readable' (nothing to do)
    messages: dict[str, int] = field(default_factory=dict)
    original: Path | None = None
    stopped_reason: str | None = None  # why reading the original ended early, if it did

    @property
    def total(self) -> int:
        """Messages in the rebuilt bag."""
        return sum(self.messages.values())


def is_readable(episode_dir: Path) -> bool:
    """Whether rosbags can open the bag and read its index (metadata.yaml present)."""
    from rosbags.highlevel import AnyReader  # noqa: PLC0415

    if not (episode_dir / 'metadata.yaml').exists():
        return False
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


def _rihs01(msgtype: str, msgdef: str) -> str:
    """Type hash from the stored definition (falls back to the Kilted typestore)."""
    try:
        store = get_typestore(Stores.EMPTY)
        store.register(get_types_from_msg(msgdef, msgtype))
        return store.hash_rihs01(msgtype)
    except Exception:  # noqa: BLE001 - IDL or odd definitions: use the distro's hash
        return get_typestore(Stores.ROS2_KILTED).hash_rihs01(msgtype)


def read_mcap_tolerant(path: Path, report: RecoveryReport
                       ) -> Iterator[tuple[TopicDef, int, bytes]]:
    """Messages of every complete chunk, with their topic definitions; stops at damage."""
    schemas: dict[int, Schema] = {}
    channels: dict[int, TopicDef] = {}
    with path.open('rb') as fh:
        try:
            for rec in StreamReader(fh, validate_crcs=True).records:
                if isinstance(rec, Schema):
                    schemas[rec.id] = rec
                elif isinstance(rec, Channel):
                    schema = schemas[rec.schema_id]
                    msgdef = schema.data.decode()
                    channels[rec.id] = TopicDef(rec.topic, schema.name, msgdef,
                                                _rihs01(schema.name, msgdef))
                elif isinstance(rec, Message):
                    yield channels[rec.channel_id], rec.log_time, rec.data
        except Exception as exc:  # noqa: BLE001 - truncated/corrupt tail ends the readable part
            report.stopped_reason = f'{type(exc).__name__}: {exc}'.strip()


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


def recover_episode(episode_dir: Path | str, *, force: bool = False) -> RecoveryReport:
    """Rebuild ``episode_dir`` into a readable rosbag2, keeping the original as ``*.orig``.

    A bag that rosbags can already open is left alone (``status='readable'``) unless ``force``.
    """
    episode_dir = Path(episode_dir)
    if not episode_dir.is_dir():
        raise RecoveryError(f'{episode_dir}: not a directory')
    src = storage_file(episode_dir)
    storage = 'mcap' if src.suffix == '.mcap' else 'sqlite3'
    report = RecoveryReport(episode_dir, storage, 'readable')
    if not force and is_readable(episode_dir):
        return report

    work = episode_dir.parent / f'.{episode_dir.name}.recovering'
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    try:
        bag = work / episode_dir.name
        _rebuild(src, bag, storage, report, read_sidecar(episode_dir))
        backup = _backup_name(src)
        src.rename(backup)
        for extra in (src.with_name(src.name + '-journal'), src.with_name(src.name + '-wal')):
            if extra.exists():
                extra.rename(_backup_name(extra))
        new_file = next(bag.glob('*.mcap' if storage == 'mcap' else '*.db3'))
        new_file.rename(episode_dir / new_file.name)
        (bag / 'metadata.yaml').replace(episode_dir / 'metadata.yaml')
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report.original = backup
    report.status = 'recovered'
    update_sidecar(episode_dir, status='recovered', recovery={
        'messages': report.messages, 'total': report.total, 'original': backup.name,
        'stopped_reason': report.stopped_reason})
    return report


def _rebuild(src: Path, bag: Path, storage: str, report: RecoveryReport,
             sidecar: dict[str, Any] | None) -> None:
    reader = read_mcap_tolerant if storage == 'mcap' else read_sqlite_tolerant
    plugin = StoragePlugin.MCAP if storage == 'mcap' else StoragePlugin.SQLITE3
    writer = Writer(bag, version=9, storage_plugin=plugin)
    writer.open()
    try:
        conns: dict[tuple[str, str], Any] = {}
        for tdef, t, data in reader(src, report):
            key = (tdef.topic, tdef.msgtype)
            if key not in conns:
                conns[key] = writer.add_connection(tdef.topic, tdef.msgtype, msgdef=tdef.msgdef,
                                                   rihs01=tdef.rihs01)
                report.messages.setdefault(tdef.topic, 0)
            writer.write(conns[key], t, data)
            report.messages[tdef.topic] += 1
        if sidecar and 'metadata' in sidecar:
            writer.set_custom_data('comsim.metadata', dump_yaml(sidecar['metadata']))
        writer.set_custom_data('comsim.recovered', f'from {src.name}: {report.stopped_reason}')
        writer.close()
    except BaseException:
        writer.abort()
        raise
