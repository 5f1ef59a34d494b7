"""Training: the loss falls on one clip, the four scores separate, checkpoints round-trip,
resume continues, and checkpoints of another config are refused."""

import json

import numpy as np
import pytest
import torch
from ns_helpers import one_thread, tiny_config  # noqa: F401
from safetensors.torch import load_file

from comsim_neural_sim.config import NeuralSimConfig
from comsim_neural_sim.data import synthetic_pair
from comsim_neural_sim.errors import CheckpointMismatchError
from comsim_neural_sim.sampling.guidance import BRANCHES
from comsim_neural_sim.sampling.pipeline import NeuralSimPipeline
from comsim_neural_sim.training import train
from comsim_neural_sim.training.report import read_csv
from comsim_neural_sim.training.train import frame_losses, main


@pytest.fixture(scope='module')
def trained(tmp_path_factory):
    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp('ckpt')
    cfg = tiny_config(p_drop_action=0.3, p_drop_sim=0.3, p_drop_context=0.5, lr=3e-3,
                      log_every=20, sample_every=200, save_every=100)
    clip = synthetic_pair(4, 16, 16, seed=1)
    res = train(cfg, [clip], out, steps=200, log=lambda s: None)
    return cfg, clip, out, res


def test_loss_falls_and_logs_are_written(trained):
    _, _, out, res = trained
    rows = read_csv(out / 'loss.csv')
    assert rows[-1]['step'] == 200 and len(rows) >= 5
    assert res.last_loss < res.first_loss / 2, (res.first_loss, res.last_loss)
    for name in ('loss.png', 'samples/step_000200.png', 'neural_sim.yaml',
                 'transformer/diffusion_pytorch_model.safetensors', 'train_state/state.json'):
        assert (out / name).is_file(), name
    assert not list(out.rglob('*.bin')) and not list(out.rglob('*.pt'))   # no pickles


def test_four_conditionings_differ_after_training(trained):
    _, clip, out, _ = trained
    pipe = NeuralSimPipeline.from_pretrained(out, device='cpu')
    sim = pipe.encode_frames(clip.sim)[None]
    from comsim_neural_sim.data.clips import normalise_actions
    act = normalise_actions(clip.actions, pipe.config)[None]
    x = torch.randn(sim.shape, generator=torch.Generator().manual_seed(0))
    t = torch.tensor([400.0])
    with torch.no_grad():
        eps = {n: pipe.transformer(x, t, sim, act, torch.tensor([s]), torch.tensor([a])).sample
               for n, (s, a) in BRANCHES.items()}
    names = list(eps)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            assert (eps[a] - eps[b]).abs().mean() > 1e-3, (a, b)


def test_checkpoint_round_trip_is_exact(trained, tmp_path):
    _, clip, out, _ = trained
    pipe = NeuralSimPipeline.from_pretrained(out, device='cpu')
    pipe.save_pretrained(tmp_path / 'copy')
    again = NeuralSimPipeline.from_pretrained(tmp_path / 'copy', device='cpu')
    a = pipe(clip.sim, clip.actions, steps=3, seed=1)
    b = again(clip.sim, clip.actions, steps=3, seed=1)
    np.testing.assert_array_equal(a, b)
    assert again.config.action_mean == pipe.config.action_mean is not None


def test_checkpoint_of_another_config_is_refused(trained, tmp_path):
    cfg, clip, out, _ = trained
    with pytest.raises(CheckpointMismatchError, match='width_dim'):
        NeuralSimPipeline.from_pretrained(out, config=cfg.replace(width_dim=64))
    with pytest.raises(CheckpointMismatchError, match='frames'):
        train(cfg.replace(frames=8, context_frames=2), [synthetic_pair(8, 16, 16)], out,
              resume=True, steps=1, log=lambda s: None)
    # transformer weights that disagree with the YAML beside them
    bad = tmp_path / 'bad'
    NeuralSimPipeline.from_pretrained(out).save_pretrained(bad)
    NeuralSimConfig.from_yaml(bad).replace(depth=3).save(bad)
    with pytest.raises(CheckpointMismatchError, match='depth'):
        NeuralSimPipeline.from_pretrained(bad)
    with pytest.raises(CheckpointMismatchError, match='skip_kernel'):
        NeuralSimPipeline.from_pretrained(out, config=cfg.replace(skip_kernel=3))


def test_resume_continues_from_saved_step(trained, tmp_path):
    cfg, clip, _, _ = trained
    out = tmp_path / 'run'
    train(cfg, [clip], out, steps=4, log=lambda s: None)
    logs = []
    train(cfg, [clip], out, resume=True, steps=6, log=logs.append)
    assert logs[0].startswith('resumed at step 4')
    assert [int(r['step']) for r in read_csv(out / 'loss.csv')][-1] == 6


def test_cli_refuses_to_overwrite_a_run_without_resume(trained, tmp_path, capsys):
    cfg, _, out, _ = trained
    cfg.save(tmp_path)
    args = ['--config', str(tmp_path / 'neural_sim.yaml'), '--data', 'synthetic:1:4',
            '--out', str(out)]
    assert main(args) == 2
    assert '--resume' in capsys.readouterr().err


def test_the_checkpoint_holds_the_weight_average_and_resume_carries_it_on(trained, tmp_path):
    _, clip, out, _ = trained
    saved = load_file(str(out / 'transformer' / 'diffusion_pytorch_model.safetensors'))
    ema = load_file(str(out / 'train_state' / 'ema.safetensors'))
    raw = load_file(str(out / 'train_state' / 'model.safetensors'))
    assert saved.keys() == ema.keys()
    assert all(torch.equal(saved[k], ema[k]) for k in saved)
    assert any(not torch.equal(saved[k], raw[k]) for k in saved)   # averaged, not the last step
    assert json.loads((out / 'train_state' / 'state.json').read_text())['ema_step'] == 200
    run = tmp_path / 'run'
    cfg = trained[0]
    train(cfg, [clip], run, steps=4, log=lambda s: None)
    train(cfg, [clip], run, resume=True, steps=6, log=lambda s: None)
    assert json.loads((run / 'train_state' / 'state.json').read_text())['ema_step'] == 6
    assert not [p for p in run.iterdir() if p.name.startswith('.')]   # no scratch left


def test_object_weighted_loss_counts_object_pixels_more_and_is_plain_without_them():
    pred, target = torch.zeros(1, 2, 3, 4, 4), torch.zeros(1, 2, 3, 4, 4)
    objects = torch.zeros(1, 2, 1, 4, 4)
    objects[0, 0, 0, 0, 0] = 1.0                         # frame 0: one object pixel
    target[0, :, :, 0, 0] = 1.0                          # the error sits on that pixel
    plain = frame_losses(pred, target, objects, 1.0)
    np.testing.assert_allclose(plain.numpy(), [[1 / 16, 1 / 16]])
    weighted = frame_losses(pred, target, objects, 9.0)
    np.testing.assert_allclose(weighted.numpy(), [[9 / 24, 1 / 16]], rtol=1e-6)
    # an error off the objects weighs less where the frame has objects
    target2 = torch.zeros_like(target)
    target2[0, :, :, 3, 3] = 1.0
    np.testing.assert_allclose(frame_losses(pred, target2, objects, 9.0).numpy(),
                               [[1 / 24, 1 / 16]], rtol=1e-6)


def test_training_on_pairs_with_object_masks_runs_with_the_weight(tmp_path):
    cfg = tiny_config(object_loss_weight=8.0, log_every=5)
    clip = synthetic_pair(4, 16, 16, seed=1)
    objects = np.zeros((4, 16, 16), np.uint8)
    objects[:, 4:8, 4:8] = 1
    from comsim_neural_sim.data.clips import PairedClip  # noqa: PLC0415
    masked = PairedClip(clip.real, clip.sim, clip.actions, 'm', objects=objects)
    said = []
    res = train(cfg, [masked, clip], tmp_path / 'ckpt', steps=10, log=said.append)
    assert np.isfinite(res.last_loss) and res.steps == 10
    assert 'object masks in 1 of 2 clips' in said[0]
    from comsim_neural_sim.errors import NeuralSimError  # noqa: PLC0415
    with pytest.raises(NeuralSimError, match='no paired episode has them'):
        train(cfg, [clip], tmp_path / 'none', steps=1, log=lambda s: None)
