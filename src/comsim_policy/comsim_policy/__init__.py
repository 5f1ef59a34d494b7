"""Diffusion Policy training and closed-loop deployment.

Public entry points are imported lazily so light modules (e.g. the node's safety checks) do
not pay for importing torch and diffusers.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    'PolicyConfig': 'comsim_policy.config',
    'PolicyRunner': 'comsim_policy.inference',
    'PolicyMismatchError': 'comsim_policy.inference',
    'DiffusionPolicyModel': 'comsim_policy.model.policy',
    'save_pretrained': 'comsim_policy.checkpoint',
    'from_pretrained': 'comsim_policy.checkpoint',
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
