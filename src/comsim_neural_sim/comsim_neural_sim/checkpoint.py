"""Checkpoint layout shared by training and sampling (all safetensors/JSON/YAML, no pickle).

    <dir>/neural_sim.yaml          NeuralSimConfig (with the data's action statistics)
    <dir>/transformer/             diffusers save_pretrained (EMA weights)
    <dir>/scheduler/               scheduler_config.json

Written file by file atomically (``comsim_core.checkpoint``), the YAML last.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from comsim_core.checkpoint import staged_directory

from .config import CONFIG_NAME, NeuralSimConfig
from .errors import CheckpointMismatchError
from .models.transformer import NeuralSimTransformer


def transformer_from_config(cfg: NeuralSimConfig) -> NeuralSimTransformer:
    """A fresh transformer shaped by ``cfg`` (model space, i.e. latent when latent)."""
    h, w = cfg.model_hw
    return NeuralSimTransformer(frames=cfg.frames, channels=cfg.model_channels, height=h,
                                width=w, action_dim=cfg.action_dim, width_dim=cfg.width_dim,
                                depth=cfg.depth, heads=cfg.heads, patch_size=cfg.patch_size,
                                patch_size_t=cfg.patch_size_t, cameras=len(cfg.cameras),
                                skip_from=cfg.skip_from, skip_kernel=cfg.skip_kernel,
                                skip_channels=cfg.skip_channels)


def save_checkpoint(directory: str | Path, cfg: NeuralSimConfig,
                    transformer: NeuralSimTransformer, scheduler: Any) -> Path:
    """Write config, transformer and scheduler so that a crash leaves the previous checkpoint
    readable (diffusers writes in place: it writes into a staging directory first)."""
    directory = Path(directory)
    with staged_directory(directory) as staging:
        transformer.save_pretrained(staging / 'transformer', safe_serialization=True)
        scheduler.save_pretrained(staging / 'scheduler')
        cfg.save(staging)
    return directory


def check_transformer(cfg: NeuralSimConfig, model: NeuralSimTransformer, where: str) -> None:
    """Raise when the saved transformer's shape config disagrees with the YAML next to it."""
    h, w = cfg.model_hw
    want = {'frames': cfg.frames, 'channels': cfg.model_channels, 'height': h, 'width': w,
            'action_dim': cfg.action_dim, 'width_dim': cfg.width_dim, 'depth': cfg.depth,
            'heads': cfg.heads, 'patch_size': cfg.patch_size, 'patch_size_t': cfg.patch_size_t,
            'cameras': len(cfg.cameras), 'skip_kernel': cfg.skip_kernel,
            'skip_channels': cfg.skip_channels}
    diff = {k: (model.config[k], v) for k, v in want.items() if model.config[k] != v}
    if diff:
        raise CheckpointMismatchError(f'{where}: transformer weights do not match '
                                      f'{CONFIG_NAME}: ' + ', '.join(
                                          f'{k} weights {a!r} vs config {b!r}'
                                          for k, (a, b) in diff.items()))


def check_saved_transformer(path: Path) -> None:
    """Refuse saved transformer weights written before the model had a camera embedding
    (loading them would leave that layer uninitialised)."""
    cfg_file = Path(path) / 'config.json'
    if not cfg_file.is_file():
        raise FileNotFoundError(f'{path}: no transformer config.json (not a neural-sim '
                                f'checkpoint?)')
    if 'cameras' not in json.loads(cfg_file.read_text()):
        raise CheckpointMismatchError(f'{path}: written by an older ComSim without per-camera '
                                      f'conditioning; retrain it (comsim-neural-sim-train)')


def load_config(path: str | Path, expect: NeuralSimConfig | None = None) -> NeuralSimConfig:
    """The checkpoint's config; with ``expect``, refuse a checkpoint of another architecture."""
    path = Path(path)
    if not (path / CONFIG_NAME).is_file():
        raise FileNotFoundError(f'{path} is not a neural-sim checkpoint (no {CONFIG_NAME})')
    cfg = NeuralSimConfig.from_yaml(path / CONFIG_NAME)
    if expect is not None:
        expect.check_compatible(cfg, what=f'checkpoint {path}')
    return cfg
