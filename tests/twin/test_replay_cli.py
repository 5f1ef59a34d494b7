"""The batch CLI: pairs episodes, prints the gap, skips finished outputs, survives bad bags."""
from __future__ import annotations

import subprocess
import sys

import pytest
from test_replay_support import record_episode

from comsim_teleop.recording.sidecar import read_sidecar
from comsim_twin.replay.cli import main
from comsim_twin.replay.paired import is_complete


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
    assert is_complete(paired)
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


def test_interrupted_output_is_replayed_again(recorded, tmp_path, capsys):
    bag, scene_file = recorded
    out = tmp_path / 'paired'
    partial = out / f'.{bag.name}_dynamic.partial'
    partial.mkdir(parents=True)
    (partial / 'junk.mcap').write_bytes(b'half a bag')
    rc = main([str(bag), '--scene', str(scene_file), '--out', str(out), '--mode', 'dynamic',
               '--no-gap'])
    assert rc == 0, capsys.readouterr()
    assert is_complete(out / f'{bag.name}_dynamic') and not partial.exists()


def test_bad_scene_file_is_a_clear_error(tmp_path):
    proc = subprocess.run([sys.executable, '-m', 'comsim_twin.replay.cli', str(tmp_path),
                           '--scene', str(tmp_path / 'none.yaml'), '--out', str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert 'twin scene' in proc.stderr and 'not found' in proc.stderr
