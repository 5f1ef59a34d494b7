"""Crash recovery: a real recorder process is SIGKILLed mid-episode, then recovered."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from conftest import TS
from rosbags.highlevel import AnyReader

from comsim_core.episodes import CorruptEpisodeError, Episode
from comsim_teleop.recording.recover import recover_episode
from comsim_teleop.recording.recover_cli import main as recover_main

ROOT = Path(__file__).resolve().parents[2]

RECORD = textwrap.dedent('''
    import sys, time
    sys.path.insert(0, {tests!r})
    from pathlib import Path
    from conftest import image_raw, joint_state_raw
    from comsim_core.episodes.topics import TopicSpec
    from comsim_core.episodes.writer import FlushPolicy
    from comsim_teleop.recording import EpisodeRecorder
    rec = EpisodeRecorder(Path({out!r}), [TopicSpec('/cam', 'sensor_msgs/msg/Image', 30.0),
                          TopicSpec('/joint_states', 'sensor_msgs/msg/JointState', 100.0)],
                          storage={storage!r}, min_free_bytes=0,
                          flush_policy=FlushPolicy(chunk_bytes=200_000, max_age_s=0.05))
    rec.start({{'task': 'crash'}})
    n = 0
    for i in range({n}):
        t = 10**9 + i * 10_000_000
        rec.on_message('/joint_states', joint_state_raw(t, [i / 100] * 7), t)
        if i % 3 == 0:
            rec.on_message('/cam', image_raw(t, h=120, w=160), t)
        n += 1 + (i % 3 == 0)
    while rec.status().queue_depth or sum(rec.status().counts.values()) < n:
        time.sleep(0.01)
    time.sleep(0.5)  # > max_age_s and the writer's idle tick: everything is flushed
    print('FLUSHED', n, flush=True)
    for i in range(5):  # a few more that may be lost
        rec.on_message('/joint_states', joint_state_raw(9 * 10**9 + i, [0.0] * 7), 9 * 10**9 + i)
    time.sleep(60)
''')


def _record_and_kill(out: Path, storage: str, n: int = 300) -> int:
    code = RECORD.format(tests=str(ROOT / 'tests'), out=str(out), storage=storage, n=n)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        str(ROOT / 'src' / p) for p in ('comsim_core', 'comsim_teleop')))
    proc = subprocess.Popen([sys.executable, '-c', code], stdout=subprocess.PIPE, text=True,
                            env=env)
    try:
        line = proc.stdout.readline()
        assert line.startswith('FLUSHED'), line
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    return int(line.split()[1])


@pytest.mark.parametrize('storage', ['mcap', 'sqlite3'])
def test_sigkill_then_recover(tmp_path: Path, storage: str) -> None:
    flushed = _record_and_kill(tmp_path, storage)
    ep_dir = next(tmp_path.iterdir())
    assert not (ep_dir / 'metadata.yaml').exists()
    with pytest.raises(CorruptEpisodeError, match='comsim-recover'):
        Episode.open(ep_dir)
    before = {p.name: p.read_bytes() for p in ep_dir.iterdir()
              if p.name != 'episode.yaml' and not p.name.startswith('.')}
    report = recover_episode(ep_dir)
    assert report.status == 'recovered' and report.total >= flushed
    assert report.original is not None and report.original.exists()
    # every original file is kept byte for byte (reading a sqlite3 bag with a hot journal
    # must not roll it back in place)
    assert sorted(b.name for b in report.backups) == sorted(f'{n}.orig' for n in before)
    for name, data in before.items():
        assert (ep_dir / f'{name}.orig').read_bytes() == data, name
    with AnyReader([ep_dir], default_typestore=TS) as r:
        assert r.message_count == report.total
    with Episode.open(ep_dir) as ep:
        js = ep.joint_states()
        assert js.position.shape[0] >= 300 and js.position[299, 0] == pytest.approx(2.99)
        assert len(list(ep.images('/cam'))) == 100
    side = yaml.safe_load((ep_dir / 'episode.yaml').read_text())
    assert side['status'] == 'recovered' and side['recovery']['total'] == report.total
    assert recover_episode(ep_dir).status == 'readable'  # idempotent


def test_plain_rosbags_sqlite3_loses_everything_on_kill(tmp_path: Path) -> None:
    """The platform fact, verified: rosbags commits sqlite3 only at close()."""
    code = textwrap.dedent(f'''
        import sys, time
        sys.path.insert(0, {str(ROOT / 'tests')!r})
        from conftest import TS, joint_state_raw
        from rosbags.rosbag2 import StoragePlugin, Writer
        w = Writer({str(tmp_path / 'bag')!r}, version=9, storage_plugin=StoragePlugin.SQLITE3)
        w.open()
        c = w.add_connection('/js', 'sensor_msgs/msg/JointState', typestore=TS)
        for i in range(500):
            w.write(c, i, joint_state_raw(i, [0.0], False))
        print('WROTE', flush=True)
        time.sleep(60)
    ''')
    proc = subprocess.Popen([sys.executable, '-c', code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().startswith('WROTE')
    proc.kill()
    proc.wait(10)
    report = recover_episode(tmp_path / 'bag')
    assert report.total == 0


def test_cli_recovers_all_unreadable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    flushed = _record_and_kill(tmp_path, 'mcap', n=60)
    assert recover_main(['--all', str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert 'recovered' in out and 'original kept as' in out
    with Episode.open(next(p for p in tmp_path.iterdir() if p.is_dir())) as ep:
        assert sum(s.count for s in ep.streams.values()) >= flushed
    assert recover_main(['--all', str(tmp_path)]) == 0
    assert 'nothing to recover' in capsys.readouterr().out
    assert recover_main([str(tmp_path / 'missing')]) == 2


def test_sqlite3_with_a_hot_journal_is_backed_up_untouched(tmp_path: Path) -> None:
    """A writer killed inside a transaction leaves a hot journal; opening the database rolls it
    back in place, so recovery reads a copy and the originals are kept byte for byte."""
    from conftest import joint_state_raw  # noqa: PLC0415

    from comsim_core.episodes.topics import TopicSpec  # noqa: PLC0415
    from comsim_core.episodes.writer import EpisodeBagWriter  # noqa: PLC0415

    ep = tmp_path / 'ep'
    w = EpisodeBagWriter(ep, [TopicSpec('/joint_states', 'sensor_msgs/msg/JointState', 100.0)],
                         storage='sqlite3')
    w.open()
    for i in range(50):
        w.write('/joint_states', joint_state_raw(10**9 + i, [i / 100] * 7), 10**9 + i)
    w.close()
    db3 = next(ep.glob('*.db3'))
    code = textwrap.dedent(f'''
        import sqlite3, time
        conn = sqlite3.connect({str(db3)!r}, isolation_level=None)
        conn.execute('PRAGMA journal_mode=DELETE')
        conn.execute('BEGIN')
        conn.execute("UPDATE messages SET data = zeroblob(length(data))")
        conn.execute('PRAGMA cache_spill=1')
        conn.execute("INSERT INTO messages (topic_id, timestamp, data) "
                     "SELECT topic_id, timestamp + 1, randomblob(200000) FROM messages")
        print('IN TRANSACTION', flush=True)
        time.sleep(60)
    ''')
    proc = subprocess.Popen([sys.executable, '-c', code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().startswith('IN TRANSACTION')
        proc.kill()
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    journal = db3.with_name(db3.name + '-journal')
    assert journal.exists()
    before = {p.name: p.read_bytes() for p in (db3, journal, ep / 'metadata.yaml')}
    report = recover_episode(ep)
    assert report.status == 'recovered' and report.messages == {'/joint_states': 50}
    for name, data in before.items():
        assert (ep / f'{name}.orig').read_bytes() == data, name
    with Episode.open(ep) as episode:
        assert episode.joint_states().position[49, 0] == pytest.approx(0.49)


def test_a_failed_install_puts_the_originals_back(tmp_path: Path, monkeypatch) -> None:
    """Recovery fails after moving the originals aside (here: the rebuilt file cannot be moved
    in): the episode keeps its own files, never none."""
    _record_and_kill(tmp_path, 'mcap')
    ep_dir = next(tmp_path.iterdir())
    before = {p.name: p.read_bytes() for p in ep_dir.iterdir() if not p.name.startswith('.')}
    real_rename = Path.rename

    def rename(self, target):
        if '.recovering' in str(self) and Path(target).parent == ep_dir:
            raise OSError(28, 'No space left on device', str(target))
        return real_rename(self, target)

    monkeypatch.setattr(Path, 'rename', rename)
    with pytest.raises(OSError):
        recover_episode(ep_dir)
    monkeypatch.undo()
    after = {p.name: p.read_bytes() for p in ep_dir.iterdir() if not p.name.startswith('.')}
    assert after == before
    assert recover_episode(ep_dir).status == 'recovered'
