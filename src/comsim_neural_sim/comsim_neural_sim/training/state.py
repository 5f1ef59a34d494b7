"""Resumable training state in safetensors + JSON (no pickle anywhere).

AdamW's state is a dict of tensors per parameter index: flattened to ``"<idx>.<name>"`` keys in
one safetensors file; the param groups and counters go to JSON.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from torch import nn

from comsim_core.checkpoint import replacing, write_text

from ..errors import NeuralSimError


def _save_weights(path: Path, module: nn.Module) -> None:
    with replacing(path) as tmp:
        save_file({k: v.detach().cpu().contiguous() for k, v in module.state_dict().items()},
                  str(tmp))


def save_train_state(directory: Path, model: nn.Module, ema: nn.Module,
                     optimizer: torch.optim.Optimizer, meta: dict[str, Any]) -> None:
    """Raw and averaged weights, optimiser tensors, then the JSON (each file atomically)."""
    _save_weights(directory / 'model.safetensors', model)
    _save_weights(directory / 'ema.safetensors', ema)
    sd = optimizer.state_dict()
    flat = {}
    for idx, st in sd['state'].items():
        for name, val in st.items():
            t = val if torch.is_tensor(val) else torch.tensor(val)
            flat[f'{idx}.{name}'] = t.detach().cpu().contiguous()
    if flat:
        with replacing(directory / 'optimizer.safetensors') as tmp:
            save_file(flat, str(tmp))
    write_text(directory / 'state.json',
               json.dumps({'param_groups': sd['param_groups'], **meta}, indent=1))


def load_train_state(directory: Path, model: nn.Module, ema: nn.Module,
                     optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """Restore in place; returns the JSON meta (step, ...)."""
    if not (directory / 'state.json').is_file():
        raise NeuralSimError(f'cannot resume: no training state in {directory}')
    meta = json.loads((directory / 'state.json').read_text())
    dev = next(model.parameters()).device
    model.load_state_dict(load_file(str(directory / 'model.safetensors'), device=str(dev)))
    ema.load_state_dict(load_file(str(directory / 'ema.safetensors'), device=str(dev)))
    state: dict[int, dict[str, torch.Tensor]] = {}
    opt_file = directory / 'optimizer.safetensors'
    if opt_file.is_file():
        for key, val in load_file(str(opt_file)).items():
            idx, name = key.split('.', 1)
            state.setdefault(int(idx), {})[name] = val
    optimizer.load_state_dict({'state': state, 'param_groups': meta.pop('param_groups')})
    return meta
