"""The batch CLI: pairs episodes, prints the gap, skips finished outputs, survives bad bags."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import yaml

from comsim_core.episodes import Episode
from comsim_core.episodes.paired import is_complete_paired
from comsim_core.episodes.reader import IMAGE
from comsim_core.episodes.sidecar import read_sidecar
from comsim_core.episodes.topics import TopicSpec
from comsim_teleop.recording import EpisodeRecorder
from comsim_twin.replay.cli import main
from fixtures.bench_lab_episodes import record_episode
from fixtures.cdr import TS, header


@pytest.fixture(scope='module')
def recorded(tmp_path_factory):
    root = tmp_path_factory.mktemp('cli')
    path, scene, _ = record_episode(root / 'real', 'move_card', seed=1, camera_hz=5.0)
    return path, scene.save(root / 'twin_scene.yaml')


def test_batch_is_resumable_and_reports_the_gap(recorded, tmp_path, capsys):
    bag, scene_file = recorded
    missing = tmp_path / 'no_such_episode'
    out = tmp_path / 'paired'
    rc = main([str(bag), str(missing), '--scene', str(scene_file), '--out', str(out)])
    text = capsys.readouterr()
    assert rc == 1, text
    assert f'no episode directory at {missing}' in text.err
    paired = out / f'{bag.name}_kinematic'
    assert is_complete_paired(paired)
    assert 'gap: front PSNR' in text.out and 'side PSNR' in text.out
    assert '1/2 episodes paired' in text.out
    side = read_sidecar(paired)
    assert side['gap']['front']['frames'] > 5 and 0 < side['gap']['front']['ssim_mean'] <= 1
    assert side['twin_scene_file'] == str(scene_file.resolve())
    mtime = (paired / 'metadata.yaml').stat().st_mtime_ns

    rc = main([str(bag), '--scene', str(scene_file), '--out', str(out), '--no-gap'])
    text = capsys.readouterr()
    assert rc == 0
    assert 'done already' in text.out and '(skipped)' in text.out
    assert (paired / 'metadata.yaml').stat().st_mtime_ns == mtime


def test_object_masks_on_request(recorded, tmp_path, capsys):
    bag, scene_file = recorded
    out = tmp_path / 'paired'
    assert main([str(bag), '--scene', str(scene_file), '--out', str(out), '--no-gap',
                 '--object-masks']) == 0
    paired = out / f'{bag.name}_kinematic'
    assert read_sidecar(paired)['objects'] == ['card']
    with Episode.open(paired) as ep:
        assert ep.streams['/sim/cameras/front/objects'].count == \
            ep.streams['/sim/cameras/front/image_raw'].count > 5


def test_interrupted_output_is_replayed_again(recorded, tmp_path, capsys):
    bag, scene_file = recorded
    out = tmp_path / 'paired'
    partial = out / f'.{bag.name}_dynamic.partial'
    partial.mkdir(parents=True)
    (partial / 'junk.mcap').write_bytes(b'half a bag')
    rc = main([str(bag), '--scene', str(scene_file), '--out', str(out), '--mode', 'dynamic',
               '--no-gap'])
    assert rc == 0, capsys.readouterr()
    assert is_complete_paired(out / f'{bag.name}_dynamic') and not partial.exists()


def test_bad_scene_file_is_a_clear_error(tmp_path):
    proc = subprocess.run([sys.executable, '-m', 'comsim_twin.replay.cli', str(tmp_path),
                           '--scene', str(tmp_path / 'none.yaml'), '--out', str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert 'twin scene' in proc.stderr and 'not found' in proc.stderr


def _rewrite(src, root, image=None):
    """A copy of a recorded episode (in ``root``, named by the recorder) with every image
    message replaced by ``image(msg)`` (bytes, or None to drop it): the same joint states and
    commands, other pictures."""
    with Episode.open(src) as ep:
        rec = EpisodeRecorder(root, [TopicSpec(t, ep.msgtype(t)) for t in ep.topics],
                              min_free_bytes=0)
        path = rec.start({'task': 'move_card', 'seed': 1, 'operator': 'scripted'})
        for topic, msgtype, log_ns, raw in ep.raw_messages(ep.topics):
            if msgtype == IMAGE and image is not None:
                raw = image(ep.decode(raw, msgtype, topic))
                if raw is None:
                    continue
            rec.on_message(topic, raw, log_ns)
        rec.stop(success=True)
    return path


def _image(msg, h, w, encoding='rgb8', channels=3):
    stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
    out = TS.types['sensor_msgs/msg/Image'](
        header=header(stamp, msg.header.frame_id), height=h, width=w, encoding=encoding,
        is_bigendian=0, step=w * channels, data=np.zeros(h * w * channels, np.uint8))
    return bytes(TS.serialize_cdr(out, 'sensor_msgs/msg/Image'))


def test_a_failing_episode_is_marked_and_the_batch_goes_on(recorded, tmp_path, capsys):
    bag, scene_file = recorded
    root = tmp_path / 'real'
    bigger = _rewrite(bag, root, lambda m: _image(m, m.height + 24, m.width + 32))
    depth = _rewrite(bag, root, lambda m: _image(m, m.height, m.width, '16UC1', 2))
    blind = _rewrite(bag, root, lambda m: None)   # cameras declared, never a frame
    bag = _rewrite(bag, root)
    out = tmp_path / 'paired'
    bags = [bigger, depth, blind, bag]
    rc = main([*map(str, bags), '--scene', str(scene_file), '--out', str(out)])
    text = capsys.readouterr()
    assert rc == 1, text
    assert is_complete_paired(out / f'{bag.name}_kinematic')
    assert '1/4 episodes paired' in text.out
    lines = {b: next(ln for ln in text.err.splitlines() if f'{b}: FAILED' in ln) for b in bags[:3]}
    assert "is 160x120" in lines[bigger] and '192x144 images' in lines[bigger], lines
    assert "'16UC1' is not supported" in lines[depth], lines
    assert "no frames for camera" in lines[blind], lines
    for b in bags[:3]:
        paired = out / f'{b.name}_kinematic'
        assert not paired.exists() and not is_complete_paired(paired)
        note = yaml.safe_load((out / f'{b.name}_kinematic.failed.yaml').read_text())
        assert note['status'] == 'failed' and note['source_episode'] == str(b)
    # the gap report failed after the replay: its output is set aside, never counted as done
    assert is_complete_paired(out / f'.{blind.name}_kinematic.failed')

    rc = main([*map(str, bags), '--scene', str(scene_file), '--out', str(out), '--no-gap'])
    text = capsys.readouterr()
    assert rc == 1 and 'done already' in text.out, text
    assert f'{blind}: kinematic replay' in text.out        # tried again (no gap: it pairs)
    assert not (out / f'{blind.name}_kinematic.failed.yaml').exists()
