"""comsim_core.checkpoint, which both trainers write through: a failed save leaves the previous
file whole and no scratch behind; a directory a library writes itself is installed file by
file."""
from __future__ import annotations

import os

import pytest

from comsim_core.checkpoint import replacing, staged_directory, write_text


def test_a_failed_write_keeps_the_previous_file_and_leaves_no_scratch(tmp_path):
    path = write_text(tmp_path / 'ckpt' / 'config.yaml', 'old')
    with pytest.raises(RuntimeError), replacing(path) as tmp:
        tmp.write_text('half a fi')
        raise RuntimeError('disk full')
    assert path.read_text() == 'old'
    assert os.listdir(path.parent) == ['config.yaml']
    with replacing(path) as tmp:
        tmp.write_text('new')
        assert path.read_text() == 'old'  # not visible before the block ends
    assert path.read_text() == 'new'


def test_a_staged_directory_is_installed_over_the_old_files_and_removed(tmp_path):
    target = write_text(tmp_path / 'out' / 'neural_sim.yaml', 'old config').parent
    write_text(target / 'loss.csv', 'kept')
    with staged_directory(target) as staging:
        (staging / 'transformer').mkdir()
        (staging / 'transformer' / 'weights.safetensors').write_text('w')
        (staging / 'neural_sim.yaml').write_text('new config')
    assert (target / 'neural_sim.yaml').read_text() == 'new config'
    assert (target / 'transformer' / 'weights.safetensors').read_text() == 'w'
    assert sorted(os.listdir(target)) == ['loss.csv', 'neural_sim.yaml', 'transformer']


def test_a_failed_staged_save_changes_nothing(tmp_path):
    target = write_text(tmp_path / 'out' / 'neural_sim.yaml', 'old config').parent
    with pytest.raises(RuntimeError), staged_directory(target) as staging:
        (staging / 'neural_sim.yaml').write_text('new config')
        raise RuntimeError('crashed while writing the weights')
    assert (target / 'neural_sim.yaml').read_text() == 'old config'
    assert os.listdir(target) == ['neural_sim.yaml']
