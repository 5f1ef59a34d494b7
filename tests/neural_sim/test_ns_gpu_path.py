"""The neural simulator's GPU path, run on the CPU at a tiny size: paired and sim episodes ->
one pack -> ``bench/neural_sim_gpu.py`` (train in a budget, translate at the pack's resolution)
-> translations within the size cap -> pseudo-real episodes in the recording format."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from ns_episodes import paired_episode, sim_episode
from ns_helpers import one_thread, tiny_config  # noqa: F401

from comsim_core.episodes import Episode

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / 'bench'
sys.path.insert(0, str(BENCH))
import neural_sim_gpu_pack  # noqa: E402

FRONT = '/cameras/front/image_raw'


@pytest.fixture(scope='module')
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp('ns_gpu')
    for i in range(2):
        paired_episode(root / 'paired', f'ep{i}', frames=10, h=24, w=20, seed=i,
                       cameras=('front', 'side'))
    sims = [sim_episode(root / 'sim', f'gen{i}', frames=7 + i, seed=i) for i in range(3)]
    assert neural_sim_gpu_pack.main(['pack', '--paired', str(root / 'paired'), '--sim',
                                     str(root / 'sim'), '--pixels', '16', '16', '--pack',
                                     str(root / 'pack.npz')]) == 0
    tiny_config(steps=10).save(root / 'cfg')
    out = root / 'out'
    res = subprocess.run([sys.executable, str(BENCH / 'neural_sim_gpu.py'), '--pack',
                          str(root / 'pack.npz'), '--out', str(out), '--config',
                          str(root / 'cfg' / 'neural_sim.yaml'), '--minutes', '0.02',
                          '--calibration-steps', '3', '--sample-steps', '2', '--work',
                          str(root / 'work'), '--device', 'cpu'],
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, 'OMP_NUM_THREADS': '1'})
    assert res.returncode == 0, res.stderr[-3000:]
    return root, sims, out, res.stdout


def test_gpu_side_imports_neither_mujoco_nor_rosbags(trained):
    assert trained[3].strip().splitlines()[-1] == '[]'


def test_translations_cover_every_packed_frame_within_the_size_cap(trained):
    root, sims, out, _ = trained
    result = json.loads((out / 'neural_sim_gpu.json').read_text())
    assert result['episodes'] == 3 and result['paired_clips'] == 4     # 2 episodes x 2 cameras
    assert result['frames'] == 2 * (7 + 8 + 9) and result['steps'] >= 3
    assert result['translations_bytes'] <= 64 * 2**20
    meta, _, packed = neural_sim_gpu_pack.read_pack(root / 'pack.npz')
    assert meta['pixels'] == [16, 16] and packed[0]['images'][FRONT][1].shape[1:] == (16, 16, 3)


def test_unpacked_episodes_keep_every_stamp_at_the_cameras_size(trained, tmp_path):
    root, sims, out, _ = trained
    done = neural_sim_gpu_pack.unpack(out / 'translations.npz', root / 'sim', tmp_path / 'pr',
                                      log=lambda s: None)
    assert [p.name for p in done] == [s.name for s in sims]
    for src, dst in zip(sims, done, strict=True):
        with Episode.open(src) as a, Episode.open(dst) as b:
            sa, sb = list(a.images(FRONT)), list(b.images(FRONT))
        assert [s for s, _ in sa] == [s for s, _ in sb]
        assert sb[0][1].shape == sa[0][1].shape == (24, 20, 3)
        side = yaml.safe_load((dst / 'episode.yaml').read_text())['metadata']
        assert side['source'] == 'pseudo_real'
        assert side['provenance']['sim_detail'] is True
        assert side['provenance']['pixels'] == [16, 16]
        assert not np.array_equal(sa[0][1], sb[0][1])


def test_a_file_that_is_not_a_pack_is_one_user_error(tmp_path, capsys):
    bad = tmp_path / 'bad.npz'
    np.savez(bad, x=np.zeros(3))
    assert neural_sim_gpu_pack.main(['unpack', '--translations', str(bad), '--sim',
                                     str(tmp_path), '--out', str(tmp_path / 'o')]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and 'not a neural-sim translations' in err[0]
