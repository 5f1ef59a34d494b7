"""Hidden realism profile: what makes the bench lab look and behave unlike the twin.

Only the bench lab reads config/bench_lab/realism.yaml; the twin must learn these effects
from data, so they are deliberately kept in one place, out of the lab description.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

import numpy as np

from comsim_bench_lab.config import LabConfigError
from comsim_core.config import field_error, load_config

Vec3 = tuple[float, float, float]
TableTexture = Literal['checker', 'gradient', 'flat']   # MuJoCo builtins


@dataclass
class RealismProfile:
    # rendering (scene)
    table_texture: TableTexture = 'checker'
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

    def __post_init__(self) -> None:
        for name in ('table_color2', 'light_color', 'white_balance'):
            setattr(self, name, np.asarray(getattr(self, name), dtype=float))

    @classmethod
    def load(cls, path: str | Path) -> RealismProfile:
        file = load_config(path, RealismFile, what='realism profile', error=LabConfigError)
        return cls(**file.given(), source=str(path))

    @classmethod
    def from_dict(cls, data: dict, source: str = '<dict>') -> RealismProfile:
        file = load_config(data, RealismFile, name=source, error=LabConfigError)
        return cls(**file.given(), source=source)


@dataclass(frozen=True)
class _Section:
    """The keys one section of realism.yaml sets; None (left out or null): the profile's default."""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
                raise field_error(LabConfigError, f.name, f'must be >= 0, got {value}')

    def given(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass(frozen=True)
class RenderSection(_Section):
    table_texture: TableTexture | None = None
    table_color2: Vec3 | None = None
    texture_repeat: float | None = None
    texture_noise: float | None = None
    shadows: bool | None = None
    shadow_size: int | None = None
    specular: float | None = None
    extra_lights: list[dict[str, Any]] | None = None
    light_color: Vec3 | None = None


@dataclass(frozen=True)
class PostprocessSection(_Section):
    distortion: bool | None = None
    noise_std: float | None = None
    exposure: float | None = None
    white_balance: Vec3 | None = None
    blur_sigma: float | None = None
    vignetting: float | None = None


@dataclass(frozen=True)
class PhysicsSection(_Section):
    friction_scale: float | None = None
    damping_scale: float | None = None
    latency_ms: float | None = None


@dataclass(frozen=True)
class RealismFile:
    """realism.yaml as written: three sections, each key optional."""

    render: RenderSection = field(default_factory=RenderSection)
    postprocess: PostprocessSection = field(default_factory=PostprocessSection)
    physics: PhysicsSection = field(default_factory=PhysicsSection)

    def given(self) -> dict[str, Any]:
        return {**self.render.given(), **self.postprocess.given(), **self.physics.given()}
