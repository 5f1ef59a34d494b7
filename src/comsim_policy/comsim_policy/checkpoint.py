"""Checkpoint directories: ``config.yaml`` + ``model.safetensors`` (+ ``training_state/``).

``save_pretrained``/``from_pretrained`` in the diffusers sense: the config travels with the
weights, normalisation stats are buffers inside the weights, the image preprocessing is JSON in
the weights' safetensors metadata, nothing is pickled. A checkpoint saved before the
preprocessing was is read with the one it was trained with (its config's sizes, ImageNet
statistics). The optional
``training_state/`` subdirectory (raw weights, optimiser moments as safetensors, counters as
JSON) lets training resume; deploy code never reads it. Files are replaced atomically, so a
crash while saving leaves the previous checkpoint readable.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
import yaml
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, load_model, save_file, save_model

from comsim_core.checkpoint import replacing, write_text
from comsim_core.errors import UserError

from .config import ConfigError, PolicyConfig
from .model.policy import DiffusionPolicyModel
from .preprocessing import METADATA_KEY, ImagePreprocessor

CONFIG = 'config.yaml'
WEIGHTS = 'model.safetensors'
TRAIN_DIR = 'training_state'


class CheckpointError(UserError, RuntimeError):
    """A checkpoint directory is missing, incomplete or does not fit its config (the user's to
    fix: one line, exit code 2)."""


def save_pretrained(model: DiffusionPolicyModel, directory: Path | str) -> Path:
    """Write weights (with normaliser stats and preprocessing), then config, into
    ``directory``, each file atomically."""
    directory = Path(directory)
    with replacing(directory / WEIGHTS) as tmp:
        save_model(model, str(tmp), metadata={'format': 'pt', 'kind': 'comsim_diffusion_policy',
                                              METADATA_KEY: model.preprocessor.to_json()})
    with replacing(directory / CONFIG) as tmp:
        model.config.to_yaml(tmp)
    return directory


def load_config(directory: Path | str) -> PolicyConfig:
    """The checkpoint's config; options added since it was saved keep their old behaviour."""
    directory = Path(directory)
    if not (directory / CONFIG).exists():
        raise CheckpointError(f'{directory} is not a policy checkpoint: no {CONFIG}')
    try:
        config = PolicyConfig.from_yaml(directory / CONFIG)
    except ConfigError as exc:
        raise CheckpointError(f'{directory}: bad {CONFIG}: {exc}') from exc
    raw = yaml.safe_load((directory / CONFIG).read_text(encoding='utf8')) or {}
    if 'encoder_head_relu' not in (raw.get('model') or {}):
        config.model.encoder_head_relu = True   # saved when every encoder head had a ReLU
    return config


def load_preprocessor(directory: Path | str, config: PolicyConfig) -> ImagePreprocessor:
    """The image preprocessing saved with the weights; it must agree with the sizes in the
    config beside them."""
    weights = Path(directory) / WEIGHTS
    try:
        with safe_open(str(weights), 'pt') as f:
            saved = (f.metadata() or {}).get(METADATA_KEY)
    except SafetensorError as exc:
        raise CheckpointError(f'{weights}: not a safetensors file: {exc}') from exc
    if saved is None:
        return ImagePreprocessor.from_config(config)   # saved before it was
    try:
        pre = ImagePreprocessor.from_json(saved)
    except ValueError as exc:
        raise CheckpointError(f'{weights}: bad {METADATA_KEY} metadata: {exc}') from exc
    if pre.image_size != tuple(config.image_size) or pre.crop_size != tuple(config.crop_size):
        raise CheckpointError(f'{weights}: its {METADATA_KEY} does not fit {CONFIG}: image_size '
                              f'{list(pre.image_size)} vs {list(config.image_size)}, crop_size '
                              f'{list(pre.crop_size)} vs {list(config.crop_size)}')
    return pre


def from_pretrained(directory: Path | str, device: str | torch.device = 'cpu'
                    ) -> DiffusionPolicyModel:
    """Rebuild the model from ``config.yaml`` and load ``model.safetensors`` (weights and
    preprocessing) strictly."""
    directory = Path(directory)
    config = load_config(directory)
    if not (directory / WEIGHTS).exists():
        raise CheckpointError(f'{directory}: {CONFIG} present but {WEIGHTS} is missing')
    model = DiffusionPolicyModel(config, load_preprocessor(directory, config))
    try:
        missing, unexpected = load_model(model, str(directory / WEIGHTS), strict=False,
                                         device=str(device))
    except Exception as exc:  # safetensors raises several types (size mismatch, bad header)
        raise CheckpointError(f'{directory / WEIGHTS} does not fit {CONFIG}: {exc}') from exc
    if missing or unexpected:
        raise CheckpointError(f'{directory / WEIGHTS} does not fit {CONFIG}: missing '
                              f'{sorted(missing)[:5]}, unexpected {sorted(unexpected)[:5]}')
    return model.to(device).eval()


# ---------------------------------------------------------------------- training state
def save_training_state(directory: Path | str, model: torch.nn.Module,
                        optimizer: torch.optim.Optimizer, state: dict[str, Any]) -> None:
    """Raw (non-EMA) weights, optimiser tensors and JSON counters under training_state/."""
    d = Path(directory) / TRAIN_DIR
    with replacing(d / 'model.safetensors') as tmp:
        save_model(model, str(tmp))
    tensors, meta = _flatten_optimizer(optimizer.state_dict())
    with replacing(d / 'optimizer.safetensors') as tmp:
        save_file(tensors, str(tmp))
    write_text(d / 'state.json', json.dumps({**state, 'optimizer_meta': meta}, indent=1))


def has_training_state(directory: Path | str) -> bool:
    return (Path(directory) / TRAIN_DIR / 'state.json').exists()


def load_training_state(directory: Path | str, model: torch.nn.Module,
                        optimizer: torch.optim.Optimizer, device: str | torch.device = 'cpu'
                        ) -> dict[str, Any]:
    """Restore raw weights and optimiser in place; returns the JSON counters."""
    d = Path(directory) / TRAIN_DIR
    if not has_training_state(directory):
        raise CheckpointError(f'cannot resume: {d} holds no training state')
    state = json.loads((d / 'state.json').read_text(encoding='utf8'))
    load_model(model, str(d / 'model.safetensors'), device=str(device))
    tensors = load_file(str(d / 'optimizer.safetensors'), device=str(device))
    optimizer.load_state_dict(_unflatten_optimizer(tensors, state.pop('optimizer_meta')))
    return state


def _flatten_optimizer(sd: dict[str, Any]) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    tensors: dict[str, torch.Tensor] = {}
    scalars: dict[str, dict[str, Any]] = {}
    for pid, entry in sd['state'].items():
        for k, v in entry.items():
            if torch.is_tensor(v):
                tensors[f'{pid}.{k}'] = v.detach().contiguous().cpu()
            else:
                scalars.setdefault(str(pid), {})[k] = v
    return tensors, {'param_groups': sd['param_groups'], 'scalars': scalars}


def _unflatten_optimizer(tensors: dict[str, torch.Tensor], meta: dict[str, Any]
                         ) -> dict[str, Any]:
    state: dict[int, dict[str, Any]] = {}
    for key, v in tensors.items():
        pid, k = key.split('.', 1)
        state.setdefault(int(pid), {})[k] = v
    for pid, entry in meta['scalars'].items():
        state.setdefault(int(pid), {}).update(entry)
    return {'state': state, 'param_groups': meta['param_groups']}
