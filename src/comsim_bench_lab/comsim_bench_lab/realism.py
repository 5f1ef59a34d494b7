"""Hidden realism profile: what makes the bench lab look and behave unlike the twin.

Only the bench lab reads config/bench_lab/realism.yaml; the twin must learn these effects
from data, so they are deliberately kept in one place, out of the lab description.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from comsim_bench_lab.config import LabConfigError, _Reader
from comsim_core.errors import load_yaml


@dataclass
class RealismProfile:
    # rendering (scene)
    table_texture: str = 'checker'          # MuJoCo builtin: checker | gradient | flat
    table_color2: np.ndarray = field(default_factory=lambda: np.array([0.45, 0.36, 0.27]))
    texture_repeat: float = 6.0
    texture_noise: float = 0.2               # fraction of random texels ('random' mark)
    shadows: bool = True
    shadow_size: int = 1024
    specular: float = 0.4
    extra_lights: list[dict] = field(default_factory=list)
    light_color: np.ndarray = field(default_factory=lambda: np.array([1.0, 0.95, 0.85]))
    # post-process (image)
    distortion: bool = True
    noise_std: float = 3.0                   # sensor noise, 8-bit grey levels
    exposure: float = 1.1                    # gain
    white_balance: np.ndarray = field(default_factory=lambda: np.array([1.05, 1.0, 0.9]))
    blur_sigma: float = 0.6
    vignetting: float = 0.25                 # relative darkening at the corners
    # physics
    friction_scale: float = 0.9
    damping_scale: float = 1.3
    latency_ms: float = 20.0
    source: str = '<defaults>'

    @classmethod
    def load(cls, path: str | Path) -> 'RealismProfile':
        path = str(path)
        return cls.from_dict(load_yaml(path, 'realism profile'), path)

    @classmethod
    def from_dict(cls, data: dict, source: str = '<dict>') -> 'RealismProfile':
        top = _Reader(data, source)
        known = set(cls.__dataclass_fields__) - {'source'}
        groups = {}
        for key in top.data:
            if key not in ('render', 'postprocess', 'physics'):
                raise LabConfigError(f'{source}: unknown section {key!r}; '
                               'allowed: render, postprocess, physics')
            groups[key] = top.sub(key)
        values: dict = {}
        for section in groups.values():
            for key in section.data:
                if key not in known:
                    raise LabConfigError(f'{source}: unknown key {section.where}.{key}; '
                                   f'allowed: {sorted(known)}')
                values[key] = section
        prof = cls(source=source)
        for key, section in values.items():
            default = getattr(prof, key)
            if isinstance(default, bool):
                setattr(prof, key, bool(section.get(key)))
            elif isinstance(default, np.ndarray):
                setattr(prof, key, section.vec(key, default.size))
            elif isinstance(default, (int, float)) and not isinstance(default, bool):
                val = section.num(key, lo=0.0)
                setattr(prof, key, int(val) if isinstance(default, int) else val)
            elif isinstance(default, list):
                val = section.get(key)
                if not isinstance(val, list):
                    raise LabConfigError(f'{source}: {section.where}.{key} must be a list')
                setattr(prof, key, val)
            else:
                setattr(prof, key, str(section.get(key)))
        if prof.table_texture not in ('checker', 'gradient', 'flat'):
            raise LabConfigError(
                f'{source}: render.table_texture must be checker, gradient or flat')
        return prof
