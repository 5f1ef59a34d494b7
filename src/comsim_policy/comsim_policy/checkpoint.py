"""Checkpoint directories: ``config.yaml`` + ``model.safetensors`` (+ ``training_state/``).

``save_pretrained``/``from_pretrained`` in the diffusers sense: the config travels with the
weights, normalisation stats are buffers inside the weights, nothing is pickled. The optional
``training_state/`` subdirectory (raw weights, optimiser moments as safetensors, counters as
JSON) lets training resume; deploy code never reads it. Files are replaced atomically, so a
crash while saving leaves the previous checkpoint readable.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch
import yaml
from safetensors.torch import load_file, load_model, save_file, save_model

from comsim_core.errors import UserError

from .config import ConfigError, PolicyConfig
from .model.policy import DiffusionPolicyModel

CONFIG = 'config.yaml'
WEIGHTS = 'model.safetensors'
TRAIN_DIR = 'training_state'


class CheckpointError(UserError, RuntimeError):
    """A checkpoint directory is missing, incomplete or does not fit its config (the user's to
    fix: one line, exit code 2)."""


def _tmp(path: Path) -> Path:
    return path.with_name(f'.{path.name}.tmp{os.getpid()}')


def save_pretrained(model: DiffusionPolicyModel, directory: Path | str) -> Path:
    """Write config + weights (including normaliser stats) into ``directory``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tmp = _tmp(directory / WEIGHTS)
    save_model(model, str(tmp), metadata={'format': 'pt', 'kind': 'comsim_diffusion_policy'})
    os.replace(tmp, directory / WEIGHTS)
    tmp = _tmp(directory / CONFIG)
    model.config.to_yaml(tmp)
    os.replace(tmp, directory / CONFIG)
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


def from_pretrained(directory: Path | str, device: str | torch.device = 'cpu'
                    ) -> DiffusionPolicyModel:
    """Rebuild the model from ``config.yaml`` and load ``model.safetensors`` strictly."""
    directory = Path(directory)
    config = load_config(directory)
    if not (directory / WEIGHTS).exists():
        raise CheckpointError(f'{directory}: {CONFIG} present but {WEIGHTS} is missing')
    model = DiffusionPolicyModel(config)
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
    d.mkdir(parents=True, exist_ok=True)
    for name, obj in (('model.safetensors', model),):
        tmp = _tmp(d / name)
        save_model(obj, str(tmp))
        os.replace(tmp, d / name)
    tensors, meta = _flatten_optimizer(optimizer.state_dict())
    tmp = _tmp(d / 'optimizer.safetensors')
    save_file(tensors, str(tmp))
    os.replace(tmp, d / 'optimizer.safetensors')
    tmp = _tmp(d / 'state.json')
    tmp.write_text(json.dumps({**state, 'optimizer_meta': meta}, indent=1), encoding='utf8')
    os.replace(tmp, d / 'state.json')


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
