"""Real write failures: a full tmpfs (ENOSPC) and RLIMIT_FSIZE (EFBIG) in a subprocess."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from conftest import image_raw, joint_state_raw

from comsim_core.episodes import Episode
from comsim_core.episodes.topics import TopicSpec
from comsim_teleop.recording import BagWriteError, EpisodeRecorder
from comsim_teleop.recording.recover import recover_episode

ROOT = Path(__file__).resolve().parents[2]
TOPICS = [TopicSpec('/cam', 'sensor_msgs/msg/Image', 30.0),
          TopicSpec('/joint_states', 'sensor_msgs/msg/JointState', 100.0)]


def _feed_images(rec: EpisodeRecorder, n: int) -> None:
    import time  # noqa: PLC0415

    for i in range(n):
        t = 10**9 + i * 33_000_000
        rec.on_message('/cam', image_raw(t, h=120, w=160), t)  # ~57 kB
        rec.on_message('/joint_states', joint_state_raw(t, [0.0] * 7), t)
        while rec.status().queue_depth > 8:  # keep the queue from dropping: we want ENOSPC
            time.sleep(0.001)


def test_enospc_on_full_tmpfs(small_tmpfs: Path) -> None:
    rec = EpisodeRecorder(small_tmpfs, TOPICS, min_free_bytes=0, ballast_bytes=64 * 1024)
    first = rec.start({'task': 'ok'})
    _feed_images(rec, 5)
    assert rec.stop(True).status == 'complete'
    second = rec.start({'task': 'too big'})
    _feed_images(rec, 200)  # ~11 MB into 3 MB
    assert rec.status().error is not None and 'No space left' in rec.status().error
    with pytest.raises(BagWriteError, match='No space left') as err:
        rec.stop(True)
    assert isinstance(err.value.__cause__, OSError)
    assert err.value.__cause__.errno == errno.ENOSPC
    assert rec.state == 'idle'
    side = yaml.safe_load((second / 'episode.yaml').read_text())
    assert side['status'] == 'failed' and 'No space left' in side['error']
    assert side['summary']['streams']['/cam']['count'] > 0
    with Episode.open(first) as ep:  # the earlier episode is intact
        assert ep.streams['/cam'].count == 5 and ep.metadata['status'] == 'complete'
    with pytest.raises(Exception, match='not enough free disk space'):
        EpisodeRecorder(small_tmpfs, TOPICS, min_free_bytes=10**7).start({'task': 'x'})


EFBIG_SCRIPT = textwrap.dedent('''
    import json, resource, signal, sys, time
    sys.path.insert(0, {tests!r})
    from pathlib import Path
    from conftest import image_raw, joint_state_raw
    from comsim_core.episodes.topics import TopicSpec
    from comsim_teleop.recording import BagWriteError, EpisodeRecorder
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (2_000_000, 2_000_000))
    rec = EpisodeRecorder(Path({out!r}), [TopicSpec('/cam', 'sensor_msgs/msg/Image', 30.0)],
                          min_free_bytes=0)
    def feed(n):
        for i in range(n):
            rec.on_message('/cam', image_raw(i, h=120, w=160), i)
            while rec.status().queue_depth > 8:
                time.sleep(0.001)
    ok = rec.start({{'task': 'small'}})
    feed(10)
    rec.stop(True)
    big = rec.start({{'task': 'big'}})
    feed(100)
    out = {{'ok': str(ok), 'big': str(big), 'status_error': rec.status().error}}
    try:
        rec.stop(True)
        out['raised'] = None
    except BagWriteError as exc:
        out['raised'] = str(exc)
        out['errno'] = exc.__cause__.errno
    print(json.dumps(out))
''')


def test_efbig_under_rlimit_fsize(tmp_path: Path) -> None:
    code = EFBIG_SCRIPT.format(tests=str(ROOT / 'tests'), out=str(tmp_path))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        str(ROOT / 'src' / p) for p in ('comsim_core', 'comsim_teleop')))
    res = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, env=env,
                         timeout=60, check=False)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out['errno'] == errno.EFBIG and 'File too large' in out['raised']
    assert 'File too large' in out['status_error']
    side = yaml.safe_load((Path(out['big']) / 'episode.yaml').read_text())
    assert side['status'] == 'failed' and 'File too large' in side['error']
    assert 'comsim-recover' in side['hint']
    with Episode.open(out['ok']) as ep:
        assert ep.streams['/cam'].count == 10
    report = recover_episode(out['big'])  # the complete chunks before the limit survive
    assert report.status == 'recovered' and report.total >= 17  # 1 MiB chunk of 57 kB images
    with Episode.open(out['big']) as ep:
        assert len(list(ep.images('/cam'))) == report.total


def test_disk_full_episode_never_counts_as_a_success(small_tmpfs: Path, tmp_path: Path) -> None:
    """The operator said success, the disk filled up: episode.yaml must not say success, and
    neither after comsim-recover, until a person confirms it."""
    import shutil  # noqa: PLC0415

    from comsim_core.episodes.sidecar import confirm_success, counts_as_success  # noqa: PLC0415

    rec = EpisodeRecorder(small_tmpfs, TOPICS, min_free_bytes=0, ballast_bytes=64 * 1024)
    path = rec.start({'task': 'too big'})
    _feed_images(rec, 200)
    with pytest.raises(BagWriteError):
        rec.stop(True)
    side = yaml.safe_load((path / 'episode.yaml').read_text())
    assert side['status'] == 'failed' and side['success'] is False
    assert side['operator_success'] is True  # what the operator said is kept, apart
    assert side['summary']['success'] is False and not counts_as_success(side)
    path = Path(shutil.copytree(path, tmp_path / 'moved' / path.name))  # to a disk with space
    report = recover_episode(path)
    side = yaml.safe_load((path / 'episode.yaml').read_text())
    assert report.status == 'recovered' and side['status'] == 'recovered'
    assert side['success'] is False and not counts_as_success(side)
    confirm_success(path, 'ann')
    side = yaml.safe_load((path / 'episode.yaml').read_text())
    assert side['success'] is True and side['success_confirmed_by'] == 'ann'
    assert counts_as_success(side)
