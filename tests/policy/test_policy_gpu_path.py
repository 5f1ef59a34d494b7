"""The policy's GPU path, run on the CPU at a tiny size: recorded episodes -> the trainer's
``prepare()`` -> one pack -> ``bench/policy_gpu_train.py`` (the trainer's loop, budgeted by a
measured step rate) -> an fp16 checkpoint the real ``PolicyRunner`` loads and runs."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file

from comsim_core.errors import UserError
from comsim_policy.checkpoint import CONFIG, WEIGHTS, load_config
from comsim_policy.config import PolicyConfig
from comsim_policy.data.cache import FrameCache
from comsim_policy.inference import PolicyRunner
from comsim_policy.training.data_setup import DataSpec, prepare
from comsim_policy.training.train import fit_normalizer
from fixtures.policy_episodes import FRONT, tiny_config, write_episode

BENCH = Path(__file__).resolve().parents[2] / 'bench'
sys.path.insert(0, str(BENCH))
import policy_gpu_pack  # noqa: E402
import policy_gpu_train  # noqa: E402

SIDE = '/cameras/side/image_raw'
CAMS = (FRONT, SIDE)
SIZE = (48, 64)
TASK = 'move_card'


@pytest.fixture(scope='module')
def packed(tmp_path_factory):
    """Four move_card successes, one failed move_card and one other task; the recipe (joint-limit
    normalisation); its packs, JPEG and raw."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp('gpu_path')
    for seed in range(4):
        write_episode(root / 'eps', seed, n_frames=16, size=SIZE, cameras=CAMS, task=TASK)
    write_episode(root / 'eps', 4, n_frames=16, size=SIZE, cameras=CAMS, task=TASK,
                  success=False)
    write_episode(root / 'eps', 5, n_frames=16, size=SIZE, cameras=CAMS, task='stack_blocks')
    recipe = tiny_config(cameras=CAMS, val_fraction=0.25, cache_dir=str(root / 'cache'))
    recipe.normalization = 'limits'   # the robot model's: MuJoCo, here only
    recipe.to_yaml(root / 'recipe.yaml')
    for name, quality in (('pack.npz', '90'), ('raw.npz', '0')):
        assert policy_gpu_pack.main(['--data', f'{root / "eps"}:gt', '--config',
                                     str(root / 'recipe.yaml'), '--tasks', TASK, '--pack',
                                     str(root / name), '--jpeg-quality', quality]) == 0
    yield root
    torch.set_num_threads(threads)


def _prepared(root: Path):
    config = PolicyConfig.from_yaml(root / 'recipe.yaml')
    config.tasks = [TASK]
    return config, prepare([DataSpec(root / 'eps', 'gt')], config,
                           FrameCache(config.train.cache_dir, config))


def test_pack_holds_what_prepare_gives_the_trainer(packed):
    config, data = _prepared(packed)
    for name, tolerance in (('raw.npz', 0), ('pack.npz', 4)):
        got_config, got, normalizer, meta = policy_gpu_pack.read_pack(packed / name)
        want = fit_normalizer(config, data).state_dict()
        assert normalizer.state_dict().keys() == want.keys()
        for k, v in normalizer.state_dict().items():
            torch.testing.assert_close(v, want[k], rtol=0, atol=0)
        assert got_config.to_dict() == config.to_dict()
        assert got_config.camera_sizes == {c: list(SIZE) for c in CAMS}
        assert got.summary == json.loads(json.dumps(data.summary))   # as JSON keeps it
        assert data.summary['episodes'] == 4 and data.summary['failed_skipped'] == 1
        for mine, theirs in ((got.train, data.train), (got.val, data.val)):
            assert [e.name for e in mine] == [e.name for e in theirs]
            for a, b in zip(mine, theirs, strict=True):
                assert a.source == 'gt'
                for field in ('state', 'action', 't_ns'):
                    np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
                for cam in CAMS:
                    diff = np.abs(a.images[cam].astype(int) - np.asarray(b.images[cam]))
                    assert a.images[cam].shape == b.images[cam].shape
                    assert diff.mean() <= tolerance
        assert len(got.val) == 1 and meta['jpeg_quality'] == (90 if name == 'pack.npz' else 0)
    assert (packed / 'pack.npz').stat().st_size < (packed / 'raw.npz').stat().st_size
    with np.load(packed / 'pack.npz', allow_pickle=False) as z:   # nothing pickled
        assert all(z[k].dtype != object for k in z.files)


def test_bad_pack_is_one_user_error(packed, tmp_path):
    (tmp_path / 'x.npz').write_bytes(b'not a zip')
    with np.load(packed / 'raw.npz', allow_pickle=False) as z:
        np.savez(tmp_path / 'cut.npz', **{k: z[k] for k in z.files if k != 'e0001_action'})
    for path, why in ((tmp_path / 'missing.npz', 'no pack'), (tmp_path / 'x.npz', 'not a'),
                      (tmp_path / 'cut.npz', 'incomplete policy pack: e0001_action')):
        with pytest.raises(policy_gpu_pack.PackError, match=f'{path}: {why}|{why} at {path}'):
            policy_gpu_pack.read_pack(path)


def _size_config(root: Path, **train) -> Path:
    size = tiny_config(cameras=CAMS, batch_size=8, log_every=2, val_every=4,
                       checkpoint_every=1000, warmup_steps=2, **train)
    size.model.vision_width = 8
    size.model.share_vision_encoder = True
    size.camera_sizes, size.tasks = {}, []
    size.to_yaml(root / 'size.yaml')
    return root / 'size.yaml'


# Trains in a fresh process, as on the GPU machine, and names the modules it ended up with.
RUN = ('import json, sys; sys.path.insert(0, sys.argv[1]); import policy_gpu_train; '
       'rc = policy_gpu_train.main(sys.argv[2:]); '
       'print(json.dumps([m for m in ("mujoco", "rosbags", "comsim_teleop", "comsim_bench_lab") '
       'if m in sys.modules])); sys.exit(rc)')


@pytest.fixture(scope='module')
def trained(packed, tmp_path_factory):
    root = tmp_path_factory.mktemp('gpu_train')
    out, work = root / 'out', root / 'work'
    res = subprocess.run([sys.executable, '-c', RUN, str(BENCH), '--pack',
                          str(packed / 'pack.npz'), '--config', str(_size_config(root)),
                          '--out', str(out), '--work', str(work), '--minutes', '0.05',
                          '--calibration-steps', '3', '--device', 'cpu'],
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, 'OMP_NUM_THREADS': '1'})
    assert res.returncode == 0, res.stderr[-3000:]
    return out, work, res.stdout


def test_gpu_path_imports_neither_mujoco_nor_rosbags(trained):
    """The GPU machine has neither installed: loading the pack, training and exporting must
    not need them."""
    assert trained[2].strip().splitlines()[-1] == '[]'


def test_gpu_train_writes_an_fp16_checkpoint_the_runner_loads(packed, trained):
    out, work, _ = trained
    result = json.loads((out / 'policy_gpu_train.json').read_text())
    assert result['calibration']['steps'] == 3
    assert result['steps'] == result['calibration']['planned_steps'] >= 3
    assert result['amp'] == 'off' and np.isfinite(result['final_loss'])
    assert result['final_val'] is not None and np.isfinite(result['final_val']['val_loss'])
    ckpt = out / 'checkpoint'
    size = (ckpt / WEIGHTS).stat().st_size
    assert result['checkpoint_bytes'] == size <= 16e6
    # the size config's model on the pack's data contract
    config = load_config(ckpt)
    assert config.model.vision_width == 8 and config.model.share_vision_encoder
    assert config.tasks == [TASK] and config.camera_sizes == {c: list(SIZE) for c in CAMS}
    assert config.train.log_every == 2 and (ckpt / CONFIG).exists()
    # parameters fp16, the normaliser's statistics fp32; about half the fp32 EMA's size
    with safe_open(str(ckpt / WEIGHTS), 'pt') as f:
        dtypes = {k: f.get_slice(k).get_dtype() for k in f.keys()}
    assert {d for k, d in dtypes.items() if k.startswith('normalizer.')} == {'F32'}
    assert {d for k, d in dtypes.items() if not k.startswith('normalizer.')} == {'F16'}
    assert size < 0.6 * (work / WEIGHTS).stat().st_size
    # the runner casts them back to fp32: the fp32 EMA weights, rounded to fp16
    runner = PolicyRunner.load(ckpt, device='cpu')
    ema = load_file(str(work / WEIGHTS))
    loaded = runner.model.state_dict()
    _, _, packed_normalizer, _ = policy_gpu_pack.read_pack(packed / 'pack.npz')
    for name, value in packed_normalizer.state_dict().items():   # the limits, fitted here
        torch.testing.assert_close(loaded[f'normalizer.{name}'], value, rtol=0, atol=0)
    assert set(dtypes) == set(ema)   # a tensor the two cameras share is stored once
    for name, value in ema.items():
        assert loaded[name].dtype == torch.float32
        want = value if name.startswith('normalizer.') else value.half().float()
        torch.testing.assert_close(loaded[name], want, rtol=0, atol=0)
    rng = np.random.default_rng(0)
    images = {c: rng.integers(0, 255, (2, *SIZE, 3), dtype=np.uint8) for c in CAMS}
    actions = runner.predict(images, np.zeros((2, 7), np.float32), seed=0)
    assert actions.shape == (config.horizon, 7) and np.isfinite(actions).all()


def test_gpu_train_refuses_what_cannot_work(packed, tmp_path, capsys):
    size = str(_size_config(tmp_path))
    args = ['--pack', str(packed / 'pack.npz'), '--config', size, '--device', 'cpu',
            '--out', str(tmp_path / 'out')]
    assert policy_gpu_train.main([*args, '--work', str(tmp_path / 'w1'), '--max-mb',
                                  '0.01']) == 2
    assert f'{size}: ' in capsys.readouterr().err and not (tmp_path / 'w1').exists()
    (tmp_path / 'w2').mkdir()
    (tmp_path / 'w2' / 'old').write_text('x')
    assert policy_gpu_train.main([*args, '--work', str(tmp_path / 'w2')]) == 2
    assert 'is not empty' in capsys.readouterr().err
    packed_config = PolicyConfig.from_yaml(packed / 'recipe.yaml')
    other = PolicyConfig.from_yaml(size)
    other.image_size = [40, 56]
    with pytest.raises(UserError, match='image_size'):
        policy_gpu_train.gpu_config(other, packed_config, 'size.yaml')
