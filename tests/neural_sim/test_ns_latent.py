"""Latent space end to end with a real diffusers AutoencoderKL (tiny, random weights, saved to a
local folder as a lab would keep a pretrained one): train, save, load, translate."""

import numpy as np
import torch
from diffusers import AutoencoderKL
from ns_helpers import one_thread, tiny_config  # noqa: F401

from comsim_neural_sim.data import synthetic_pair
from comsim_neural_sim.models.autoencoder import LatentCodec
from comsim_neural_sim.sampling.pipeline import NeuralSimPipeline
from comsim_neural_sim.training.train import train


def _tiny_vae(path):
    torch.manual_seed(0)
    vae = AutoencoderKL(in_channels=3, out_channels=3, latent_channels=4,
                        down_block_types=('DownEncoderBlock2D', 'DownEncoderBlock2D'),
                        up_block_types=('UpDecoderBlock2D', 'UpDecoderBlock2D'),
                        block_out_channels=(8, 16), layers_per_block=1, norm_num_groups=4,
                        sample_size=16)
    vae.save_pretrained(path, safe_serialization=True)
    return path


def test_latent_pipeline_trains_saves_loads_and_translates(tmp_path):
    vae_dir = _tiny_vae(tmp_path / 'vae')
    codec = LatentCodec.from_pretrained(vae_dir)
    assert (codec.downsample, codec.channels) == (2, 4)
    cfg = tiny_config(space='latent', autoencoder_path=str(vae_dir), latent_channels=4,
                      latent_downsample=2, patch_size=2, cameras=['front'])
    assert cfg.model_hw == (8, 8) and cfg.model_channels == 4
    clips = [synthetic_pair(8, cfg.height, cfg.width, cfg.action_dim, seed=i) for i in range(2)]
    res = train(cfg, clips, tmp_path / 'ckpt', steps=4, log=lambda s: None)
    assert np.isfinite(res.last_loss)
    pipe = NeuralSimPipeline.from_pretrained(tmp_path / 'ckpt', device='cpu')
    assert pipe.codec is not None and pipe.config.space == 'latent'
    # the frames really go through the autoencoder: latents are 8x8x4 for a 16x16 clip
    assert tuple(pipe.encode_frames(clips[0].sim).shape) == (8, 4, 8, 8)
    out = pipe(clips[0].sim, clips[0].actions, steps=2, seed=0, camera='front')
    assert out.shape == clips[0].sim.shape and out.dtype == np.uint8
