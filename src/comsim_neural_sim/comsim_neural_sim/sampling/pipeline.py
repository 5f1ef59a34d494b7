"""``NeuralSimPipeline``: sim video + actions -> pseudo-real video, for episodes of any length.

Episodes are cut into overlapping windows of ``frames``; each window after the first is
conditioned on the last ``context_frames`` frames already generated, so the look (texture,
lighting) carries over from window to window instead of being re-drawn.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ..checkpoint import (
    check_saved_transformer,
    check_transformer,
    load_config,
    save_checkpoint,
    transformer_from_config,
)
from ..config import NeuralSimConfig
from ..data.clips import normalise_actions
from ..data.frames import check_frames, frames_to_tensor, tensor_to_frames
from ..errors import InputShapeError, NeuralSimError
from ..models.autoencoder import LatentCodec
from ..models.transformer import NeuralSimTransformer
from ..schedulers import Scheduler, make_scheduler
from .guidance import MODES, GuidanceWeights, guided_prediction


class NeuralSimPipeline:
    """Transformer + scheduler (+ autoencoder in latent space) with the config they share."""

    def __init__(self, transformer: NeuralSimTransformer, config: NeuralSimConfig,
                 scheduler: Scheduler | None = None, codec: LatentCodec | None = None) -> None:
        check_transformer(config, transformer, 'pipeline')
        if config.space == 'latent' and codec is None:
            codec = LatentCodec.from_pretrained(config.autoencoder_path)
        self.transformer = transformer.eval()
        self.config = config
        self.scheduler = scheduler or make_scheduler(config)
        self.codec = codec

    # -- persistence ----------------------------------------------------------------------
    @classmethod
    def from_pretrained(cls, path: str | Path, config: NeuralSimConfig | None = None,
                        device: str | torch.device | None = None) -> NeuralSimPipeline:
        """Load a checkpoint; ``config`` (optional) must describe the same architecture."""
        cfg = load_config(path, expect=config)
        check_saved_transformer(Path(path) / 'transformer')
        model = NeuralSimTransformer.from_pretrained(Path(path) / 'transformer')
        pipe = cls(model, cfg)
        return pipe.to(device or ('cuda' if torch.cuda.is_available() else 'cpu'))

    def save_pretrained(self, path: str | Path) -> None:
        """Config, transformer and scheduler, staged so a crash keeps the old checkpoint."""
        save_checkpoint(path, self.config, self.transformer, self.scheduler)

    def to(self, device: str | torch.device) -> NeuralSimPipeline:
        self.transformer.to(device)
        if self.codec is not None:
            self.codec.vae.to(device)
        return self

    @property
    def device(self) -> torch.device:
        return next(self.transformer.parameters()).device

    def camera_index(self, camera: str | None) -> int:
        """Index of ``camera`` among the cameras the checkpoint was trained on (None: 0)."""
        if camera is None:
            return 0
        if camera not in self.config.cameras:
            raise NeuralSimError(f'camera {camera!r}: this checkpoint was trained on cameras '
                                 f'{self.config.cameras} only; a camera it never saw would be '
                                 f'translated blind')
        return self.config.cameras.index(camera)

    # -- model space ----------------------------------------------------------------------
    def encode_frames(self, frames: np.ndarray) -> torch.Tensor:
        """(T, H, W, 3) uint8 -> (T, C, h, w) model-space tensor on the pipeline's device."""
        cfg = self.config
        x = frames_to_tensor(frames, cfg.height, cfg.width).to(self.device)
        return self.codec.encode(x) if self.codec is not None else x

    def decode_frames(self, x: torch.Tensor, height: int, width: int) -> np.ndarray:
        if self.codec is not None:
            x = self.codec.decode(x)
        return tensor_to_frames(x, height, width)

    @torch.no_grad()
    def sample_window(self, sim: torch.Tensor, actions: torch.Tensor, weights: GuidanceWeights,
                      mode: str, steps: int, generator: torch.Generator,
                      context: torch.Tensor | None = None,
                      context_mask: torch.Tensor | None = None,
                      camera: torch.Tensor | None = None) -> torch.Tensor:
        """Denoise one batch of windows (B, F, C, h, w) from noise in ``steps`` steps."""
        if steps < 1:
            raise NeuralSimError(f'steps must be >= 1, got {steps}')
        x = torch.randn(sim.shape, generator=generator, device=generator.device,
                        dtype=torch.float32).to(self.device)
        sched = self.scheduler
        sched.set_timesteps(steps, device=self.device)
        x = x * float(getattr(sched, 'init_noise_sigma', 1.0))
        autocast = torch.autocast('cuda', dtype=torch.bfloat16,
                                  enabled=self.device.type == 'cuda')
        for t in sched.timesteps:
            with autocast:
                pred = guided_prediction(self.transformer, x, t.expand(x.shape[0]).float(), sim,
                                         actions, weights, mode, context, context_mask, camera)
            x = sched.step(pred.float(), t, x).prev_sample
        return x

    @torch.no_grad()
    def generate(self, sim: torch.Tensor, actions: torch.Tensor, weights: GuidanceWeights,
                 mode: str = 'composed', steps: int = 10, seed: int = 0,
                 camera: torch.Tensor | None = None) -> torch.Tensor:
        """Model-space episodes (B, T, C, h, w) and normalised actions (B, T, A), any T;
        ``camera`` (B,) indexes the config's cameras (default: the first)."""
        cfg = self.config
        b, t_len = sim.shape[:2]
        f, k = cfg.frames, cfg.context_frames
        stride = f - k
        n_win = 1 + max(0, -(-(t_len - f) // stride))
        total = f + (n_win - 1) * stride
        pad = total - t_len
        if pad:
            sim = torch.cat([sim, sim[:, -1:].expand(b, pad, *sim.shape[2:])], dim=1)
            actions = torch.cat([actions, actions[:, -1:].expand(b, pad, actions.shape[2])], 1)
        gen = torch.Generator(self.device if self.device.type == 'cuda' else 'cpu')
        gen.manual_seed(int(seed))
        out = torch.zeros_like(sim)
        mask = torch.zeros(b, f, device=self.device)
        mask[:, :k] = 1.0
        for w in range(n_win):
            s = w * stride
            ctx = out[:, s:s + f] if w else None
            x = self.sample_window(sim[:, s:s + f], actions[:, s:s + f], weights, mode, steps,
                                   gen, ctx, mask if w else None, camera)
            lo = 0 if w == 0 else k
            out[:, s + lo:s + f] = x[:, lo:]
        return out[:, :t_len]

    def __call__(self, sim_frames: np.ndarray, actions: np.ndarray, w_action: float = 1.0,
                 w_sim: float = 1.0, steps: int = 10, seed: int = 0, mode: str = 'composed',
                 w_joint: float | None = None, camera: str | None = None) -> np.ndarray:
        """Translate a sim episode (T, H, W, 3) uint8 driven by ``actions`` (T, A).

        Returns (T, H, W, 3) uint8 at the input's resolution. ``mode``: 'composed' (w_action,
        w_sim), 'joint' (w_joint, default w_action), 'action', 'sim' or 'uncond'. ``camera``:
        which of the checkpoint's cameras filmed it (None: the first).
        """
        if mode not in MODES:
            raise NeuralSimError(f'unknown mode {mode!r}; one of {MODES}')
        check_frames(sim_frames, 'sim_frames')
        actions = np.asarray(actions)
        if actions.ndim != 2 or len(actions) != len(sim_frames):
            raise InputShapeError(f'actions must be (T={len(sim_frames)}, A), got '
                                  f'{actions.shape}')
        a = normalise_actions(actions, self.config).to(self.device)
        sim = self.encode_frames(sim_frames)
        weights = GuidanceWeights(w_action, w_sim, w_action if w_joint is None else w_joint)
        cam = torch.tensor([self.camera_index(camera)], device=self.device)
        out = self.generate(sim[None], a[None], weights, mode, steps, seed, cam)[0]
        h, w = sim_frames.shape[1:3]
        return self.decode_frames(out, h, w)


def new_pipeline(cfg: NeuralSimConfig, seed: int = 0) -> NeuralSimPipeline:
    """A randomly initialised pipeline for ``cfg`` (tests, benchmarks, the start of training)."""
    torch.manual_seed(seed)
    return NeuralSimPipeline(transformer_from_config(cfg), cfg)
