"""Translation: pseudo-real episodes keep every non-image byte and every image stamp, refuse
checkpoints of another config, and an interrupted run resumes by skipping finished outputs."""

import numpy as np
import pytest
import yaml
from ns_episodes import paired_episode, sim_episode
from ns_helpers import one_thread, randomise, tiny_config  # noqa: F401
from rosbags.highlevel import AnyReader
from rosbags.typesys import Stores, get_typestore

from comsim_core.episodes import PARTIAL_DIR, EpisodeMeta
from comsim_neural_sim.data import load_paired_episode
from comsim_neural_sim.errors import CheckpointMismatchError, MissingStreamError
from comsim_neural_sim.sampling.pipeline import new_pipeline
from comsim_neural_sim.translate import translate_dir
from comsim_neural_sim.translate.cli import main as cli_main

TS = get_typestore(Stores.ROS2_KILTED)
IMAGE = 'sensor_msgs/msg/Image'


def _raw(path):
    with AnyReader([path], default_typestore=TS) as r:
        return [(c.topic, c.msgtype, t, bytes(raw)) for c, t, raw in r.messages()]


@pytest.fixture(scope='module')
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp('tr')
    sims = [sim_episode(root / 'sim', f'ep{i}', frames=5 + i, seed=i) for i in range(3)]
    cfg = tiny_config()
    pipe = new_pipeline(cfg)
    randomise(pipe.transformer, seed=3, scale=0.1)
    ckpt = root / 'ckpt'
    pipe.save_pretrained(ckpt)
    out = translate_dir(root / 'sim', ckpt, root / 'out', {'w_action': 1.5, 'w_sim': 0.5},
                        steps=2, seed=4, batch=2, log=lambda s: None)
    return root, sims, cfg, ckpt, out


def test_non_image_bytes_and_image_stamps_are_identical(setup):
    _, sims, _, _, outs = setup
    assert [o.name for o in outs] == [s.name for s in sims]
    for src, dst in zip(sims, outs):
        a, b = _raw(src), _raw(dst)
        assert len(a) == len(b)
        n_img = 0
        for (ta, ma, la, ra), (tb, mb, lb, rb) in zip(a, b):
            assert (ta, ma, la) == (tb, mb, lb)          # same topic, type, log time, order
            if ma != IMAGE:
                assert ra == rb, ta                      # byte-for-byte
                continue
            n_img += 1
            ia, ib = TS.deserialize_cdr(ra, ma), TS.deserialize_cdr(rb, mb)
            assert (ia.header.stamp.sec, ia.header.stamp.nanosec, ia.header.frame_id) == \
                (ib.header.stamp.sec, ib.header.stamp.nanosec, ib.header.frame_id)
            assert (ib.height, ib.width, ib.encoding) == (ia.height, ia.width, 'rgb8')
            assert not np.array_equal(ia.data, ib.data)  # pixels really were replaced
        assert n_img == 2 * len(list(a for a in a if a[0] == '/cameras/front/image_raw'))


def test_sidecar_says_pseudo_real_with_provenance(setup):
    _, sims, cfg, ckpt, outs = setup
    side = yaml.safe_load((outs[0] / 'episode.yaml').read_text())
    meta = side['metadata']
    assert side['status'] == 'complete' and meta['source'] == 'pseudo_real'
    prov = meta['provenance']
    assert prov['checkpoint'] == str(ckpt.resolve()) and len(prov['config_hash']) == 16
    assert prov['guidance']['w_action'] == 1.5 and prov['guidance']['w_sim'] == 0.5
    assert prov['steps'] == 2 and prov['seed'] == 4
    assert prov['source_episode'] == str(sims[0].resolve())
    assert meta['task'] == 'synthetic'                   # source metadata kept
    typed = EpisodeMeta.from_sidecar(side)
    assert typed.source == 'pseudo_real' and typed.task == 'synthetic'


def test_worker_processes_make_the_same_frames_as_one(setup, tmp_path):
    root, sims, _, ckpt, _ = setup
    kw = {'steps': 2, 'seed': 4, 'batch': 1, 'log': lambda s: None}
    one = translate_dir(root / 'sim', ckpt, tmp_path / 'one', **kw)
    two = translate_dir(root / 'sim', ckpt, tmp_path / 'two', workers=2, **kw)
    assert [p.name for p in two] == [s.name for s in sims]
    for a, b in zip(one, two, strict=True):
        images = [(t, raw) for t, m, _, raw in _raw(a) if m == IMAGE]
        assert images and images == [(t, raw) for t, m, _, raw in _raw(b) if m == IMAGE]


def test_worker_parts_are_contiguous_whole_batches():
    from comsim_neural_sim.translate.episode import _worker_parts
    eps = [f'e{i}' for i in range(7)]
    assert _worker_parts(eps, 2, 2) == [['e0', 'e1', 'e2', 'e3'], ['e4', 'e5', 'e6']]
    assert _worker_parts(eps, 4, 8) == [eps[:4], eps[4:]]
    assert _worker_parts(eps, 2, 1) == [eps] and _worker_parts([], 2, 2) == []


def test_checkpoint_of_another_config_is_refused(setup, tmp_path):
    root, _, cfg, ckpt, _ = setup
    with pytest.raises(CheckpointMismatchError, match='width_dim'):
        translate_dir(root / 'sim', ckpt, tmp_path, config=cfg.replace(width_dim=64),
                      log=lambda s: None)
    assert not list(tmp_path.glob('ep*'))


def test_missing_paired_stream_is_named(tmp_path):
    ep = paired_episode(tmp_path, 'only_real', frames=4, streams=('real',))
    with pytest.raises(MissingStreamError, match='/sim/cameras/front/image_raw'):
        load_paired_episode(ep)


def test_interrupted_run_resumes_and_skips_complete(setup, tmp_path):
    root, sims, _, ckpt, _ = setup
    out = tmp_path / 'out'
    translate_dir(root / 'sim', ckpt, out, steps=1, log=lambda s: None)
    stamps = {p.name: (p / 'episode.yaml').stat().st_mtime_ns for p in out.glob('ep*')}
    # simulate a kill: ep1's output half written, never renamed
    (out / 'ep1').rename(out / PARTIAL_DIR / 'ep1')
    logs = []
    translate_dir(root / 'sim', ckpt, out, steps=1, log=logs.append)
    assert sum('skip' in s for s in logs) == 2
    assert (out / 'ep0' / 'episode.yaml').stat().st_mtime_ns == stamps['ep0']
    assert (out / 'ep1' / 'metadata.yaml').is_file()
    assert not (out / PARTIAL_DIR / 'ep1').exists()
    assert _raw(out / 'ep1')[0][3] == _raw(sims[1])[0][3]


def test_cli_translates_and_reports_errors(setup, tmp_path, capsys):
    root, _, _, ckpt, _ = setup
    assert cli_main([str(root / 'sim' / 'ep0'), '--checkpoint', str(ckpt), '--out',
                     str(tmp_path), '--steps', '1']) == 0
    assert (tmp_path / 'ep0' / 'metadata.yaml').is_file()
    assert cli_main([str(tmp_path / 'nope'), '--checkpoint', str(ckpt), '--out',
                     str(tmp_path)]) == 2
    assert 'no sim-episode directory' in capsys.readouterr().err


def _images(path, topic='/cameras/front/image_raw'):
    out = []
    for t, m, _, raw in _raw(path):
        if t == topic and m == IMAGE:
            img = TS.deserialize_cdr(raw, m)
            out.append(np.asarray(img.data, np.uint8).reshape(img.height, img.width, 3))
    return np.stack(out)


def test_sim_detail_adds_exactly_the_sims_detail_above_the_models_resolution(setup, tmp_path):
    import torch

    from comsim_neural_sim.data.frames import resize_clip
    root, sims, cfg, ckpt, _ = setup
    plain = translate_dir([sims[0]], ckpt, tmp_path / 'plain', steps=2, seed=4,
                          log=lambda s: None)[0]
    kept = translate_dir([sims[0]], ckpt, tmp_path / 'kept', steps=2, seed=4,
                         sim_detail=True, log=lambda s: None)[0]
    action = translate_dir([sims[0]], ckpt, tmp_path / 'action', steps=2, seed=4, mode='action',
                           sim_detail=True, log=lambda s: None)[0]
    sim = _images(sims[0]).astype(np.float32)
    s = torch.from_numpy(sim).permute(0, 3, 1, 2)
    detail = (s - resize_clip(resize_clip(s, cfg.height, cfg.width), *sim.shape[1:3]))
    detail = detail.permute(0, 2, 3, 1).numpy()
    expected = np.clip(_images(plain) + detail, 0, 255)
    assert np.abs(_images(kept) - expected).max() <= 1
    assert np.abs(detail).max() > 10                          # there was detail to keep
    prov = lambda p: yaml.safe_load((p / 'episode.yaml').read_text())['metadata']['provenance']  # noqa: E731
    assert prov(kept)['sim_detail'] is True and prov(plain)['sim_detail'] is False
    assert prov(action)['sim_detail'] is False                # action-only never sees the sim
