"""Transformer and pipeline: shapes, seeded determinism, clear errors for bad inputs."""

import numpy as np
import pytest
import torch
from ns_helpers import one_thread, randomise, tiny_config  # noqa: F401

from comsim_neural_sim.checkpoint import transformer_from_config
from comsim_neural_sim.data import synthetic_pair
from comsim_neural_sim.errors import InputShapeError, NeuralSimError
from comsim_neural_sim.sampling.pipeline import NeuralSimPipeline


def _inputs(cfg, b=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    shape = (b, cfg.frames, 3, cfg.height, cfg.width)
    return (torch.randn(shape, generator=g), torch.rand(b, generator=g) * 999,
            torch.randn(shape, generator=g), torch.randn(b, cfg.frames, 7, generator=g))


def test_output_shape_matches_clip_and_depends_on_inputs():
    cfg = tiny_config()
    m = randomise(transformer_from_config(cfg)).eval()
    x, t, sim, act = _inputs(cfg)
    y = m(x, t, sim, act).sample
    assert y.shape == x.shape
    assert not torch.allclose(y, m(x, t, sim, act + 1.0).sample)   # actions reach the output
    assert not torch.allclose(y, m(x, t, sim * 0.5, act).sample)   # sim reaches the output


def test_same_seed_same_weights_and_same_samples():
    cfg = tiny_config()
    clip = synthetic_pair(6, 20, 24)
    outs = []
    for _ in range(2):
        torch.manual_seed(3)
        pipe = NeuralSimPipeline(randomise(transformer_from_config(cfg), 1), cfg)
        outs.append(pipe(clip.sim, clip.actions, steps=3, seed=5))
    assert outs[0].shape == clip.sim.shape and outs[0].dtype == np.uint8
    np.testing.assert_array_equal(outs[0], outs[1])
    other = pipe(clip.sim, clip.actions, steps=3, seed=6)
    assert np.abs(other.astype(int) - outs[0]).mean() > 1.0


@pytest.mark.parametrize('t_len', [1, 4, 9])
def test_any_episode_length_comes_back_at_input_resolution(t_len):
    cfg = tiny_config()
    pipe = NeuralSimPipeline(randomise(transformer_from_config(cfg)), cfg)
    clip = synthetic_pair(t_len, 30, 22)
    out = pipe(clip.sim, clip.actions, steps=2, seed=0, mode='joint')
    assert out.shape == (t_len, 30, 22, 3)


def test_bad_shapes_give_clear_errors():
    cfg = tiny_config()
    m = transformer_from_config(cfg)
    x, t, sim, act = _inputs(cfg)
    with pytest.raises(InputShapeError, match='frames'):
        m(x[:, :3], t, sim[:, :3], act[:, :3])
    with pytest.raises(InputShapeError, match='height, width'):
        m(x[..., :8], t, sim[..., :8], act)
    with pytest.raises(InputShapeError, match='action_dim'):
        m(x, t, sim, act[..., :6])
    pipe = NeuralSimPipeline(m, cfg)
    clip = synthetic_pair(5, 16, 16)
    with pytest.raises(InputShapeError, match='action_dim=7'):
        pipe(clip.sim, clip.actions[:, :6])
    with pytest.raises(InputShapeError, match='T=5'):
        pipe(clip.sim, clip.actions[:4])
    with pytest.raises(InputShapeError, match='uint8'):
        pipe(clip.sim.astype(np.float32), clip.actions)
    with pytest.raises(NeuralSimError, match='unknown mode'):
        pipe(clip.sim, clip.actions, mode='both')


def test_one_network_tells_the_cameras_apart():
    cfg = tiny_config(cameras=['front', 'side'])
    m = randomise(transformer_from_config(cfg)).eval()
    x, t, sim, act = _inputs(cfg)
    front = m(x, t, sim, act, camera=torch.tensor([0, 0])).sample
    torch.testing.assert_close(front, m(x, t, sim, act).sample)   # default: the first camera
    assert not torch.allclose(front, m(x, t, sim, act, camera=torch.tensor([1, 1])).sample)
    with pytest.raises(InputShapeError, match='camera index'):
        m(x, t, sim, act, camera=torch.tensor([0, 2]))


def test_clips_carry_their_camera_and_unknown_cameras_are_refused():
    from comsim_neural_sim.config import NeuralSimConfig  # noqa: PLC0415
    from comsim_neural_sim.data.clips import ClipDataset, PairedClip  # noqa: PLC0415

    cfg = tiny_config(cameras=['front', 'side'])
    base = synthetic_pair(8, cfg.height, cfg.width, cfg.action_dim, seed=0)
    clips = [PairedClip(base.real, base.sim, base.actions, 'ep', cam) for cam in ('side', 'front')]
    ds = ClipDataset(clips, cfg)
    cams = {int(ds[i]['camera']) for i in range(len(ds))}
    assert cams == {0, 1}
    with pytest.raises(InputShapeError, match="camera 'top'"):
        ClipDataset([PairedClip(base.real, base.sim, base.actions, 'ep', 'top')], cfg)
    # configs written before there were several cameras still load
    legacy = {k: v for k, v in cfg.to_dict().items() if k != 'cameras'} | {'camera': 'side'}
    assert NeuralSimConfig.from_dict(legacy).cameras == ['side']


def test_pipeline_refuses_a_camera_the_checkpoint_never_saw():
    cfg = tiny_config(cameras=['front'])
    pipe = NeuralSimPipeline(transformer_from_config(cfg), cfg)
    clip = synthetic_pair(cfg.frames, cfg.height, cfg.width, cfg.action_dim, seed=1)
    assert pipe(clip.sim, clip.actions, steps=1, camera='front').shape == clip.sim.shape
    with pytest.raises(NeuralSimError, match="camera 'side'"):
        pipe(clip.sim, clip.actions, steps=1, camera='side')


def test_skip_from_sim_starts_as_the_sim_frame_where_the_sim_is_given():
    cfg = tiny_config().replace(skip_from='sim')
    m = transformer_from_config(cfg).eval()
    x, t, sim, act = _inputs(cfg)
    with torch.no_grad():
        kept = m(x, t, sim, act).sample
        dropped = m(x, t, sim, act, sim_keep=torch.zeros(2)).sample
    torch.testing.assert_close(kept, sim)                 # untrained: x0 = the sim frame
    assert dropped.abs().max() < 1e-6                     # no sim: nothing to pass through
    noisy = transformer_from_config(tiny_config()).eval()
    with torch.no_grad():
        assert noisy(x, t, sim, act).sample.abs().max() < 1e-6   # the default starts shut


def test_local_skip_starts_as_the_sim_frame_and_then_sees_neighbouring_pixels(tmp_path):
    cfg = tiny_config().replace(skip_from='sim', skip_kernel=3, skip_channels=4)
    m = transformer_from_config(cfg).eval()
    x, t, sim, act = _inputs(cfg)
    with torch.no_grad():
        torch.testing.assert_close(m(x, t, sim, act).sample, sim)   # zero-initialised: x0 = sim
    randomise(m.skip_local, seed=3, scale=0.3)
    poked = sim.clone()
    poked[:, :, :, 8, 8] += 1.0          # one sim pixel changes...
    with torch.no_grad():
        diff = (m(x, t, poked, act).sample - m(x, t, sim, act).sample).abs()
        linear = transformer_from_config(cfg.replace(skip_kernel=1)).eval()
        randomise(linear.skip, seed=3, scale=0.3)
        lin = (linear(x, t, poked, act).sample - linear(x, t, sim, act).sample).abs()
    # ...the local convolutions carry it to its neighbours (two 3x3 layers: 2 px away), the
    # per-pixel skip does not; the patch tokens are shut at init in both
    assert diff[..., 10, 10].min() > 0 and diff[..., 8, 11].max() < 1e-6
    assert lin[..., 8, 8].min() > 0 and lin[..., 9, 9].max() < 1e-6
    # saved and loaded with its local layers
    pipe = NeuralSimPipeline(m, cfg)
    pipe.save_pretrained(tmp_path / 'ckpt')
    again = NeuralSimPipeline.from_pretrained(tmp_path / 'ckpt')
    torch.testing.assert_close(again.transformer.skip_local[0].weight, m.skip_local[0].weight)


def test_local_skip_kernel_is_checked():
    with pytest.raises(NeuralSimError, match='skip_kernel must be an odd number'):
        tiny_config().replace(skip_kernel=2)
    with pytest.raises(NeuralSimError, match='skip_channels must be >= 1'):
        tiny_config().replace(skip_kernel=3, skip_channels=0)


def test_skip_from_sim_needs_x0_prediction():
    with pytest.raises(NeuralSimError, match='skip_from: sim .* needs prediction: sample'):
        tiny_config().replace(skip_from='sim', prediction='epsilon')


def test_keeping_sim_detail_restores_what_the_models_resolution_drops():
    from comsim_neural_sim.data.frames import keep_sim_detail, resize_clip
    sim = np.full((2, 48, 64, 3), 90, np.uint8)
    sim[:, 20:23, 30:33] = 240                      # a 3 px object
    s = torch.from_numpy(sim).permute(0, 3, 1, 2).float()
    low = resize_clip(resize_clip(s, 12, 16), 48, 64).permute(0, 2, 3, 1).numpy()
    blurred = np.clip(low, 0, 255).round().astype(np.uint8)
    assert blurred[0, 21, 31, 0] < 200              # at 12x16 the object is a smudge
    kept = keep_sim_detail(blurred, sim, 12, 16)
    assert np.abs(kept.astype(int) - sim).max() <= 1   # the sim's low-pass + its detail = sim
    darker = keep_sim_detail((blurred * 0.5).astype(np.uint8), sim, 12, 16)
    assert darker[0, 21, 31, 0] - darker[0, 5, 5, 0] > 100   # the object survives a new look
