"""Generation settings (`config/twin/generation.yaml`), validated once at load."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from comsim_core.errors import UserError, check_fields, load_yaml

FORMAT = 'comsim-generation/1'
DEFAULT_CONFIG = Path(__file__).resolve().parents[4] / 'config' / 'twin' / 'generation.yaml'
FAILURE_MODES = ('label', 'discard')
REGION_MODES = ('id', 'wide', 'mix')


class GenerationConfigError(UserError, ValueError):
    """A generation config with missing or impossible values."""


@dataclass
class GenerationConfig:
    tasks: dict[str, dict[str, Any]]
    randomise: dict[str, Any] = field(default_factory=dict)
    backend: str = 'mujoco'
    control_hz: float = 50.0
    camera_hz: float = 30.0
    joint_state_hz: float = 100.0
    image_scale: float = 1.0
    settle_s: float = 0.6
    max_s: float = 20.0
    failures: str = 'label'
    region: str = 'id'
    wide_fraction: float = 0.3
    storage: str = 'mcap'
    distro: str = 'kilted'
    workers: int = 0
    llm: dict[str, Any] = field(default_factory=dict)
    source: str = '<dict>'

    def task(self, name: str) -> dict[str, Any]:
        if name not in self.tasks:
            raise GenerationConfigError(f'{self.source}: no task {name!r}; configured: '
                                        f'{sorted(self.tasks)}')
        return self.tasks[name]

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != 'source'}

    @classmethod
    def from_dict(cls, data: dict, source: str = '<dict>') -> 'GenerationConfig':
        if not isinstance(data, dict):
            raise GenerationConfigError(f'{source}: expected a mapping')
        if data.get('format', FORMAT) != FORMAT:
            raise GenerationConfigError(f'{source}: format {data.get("format")!r}, '
                                        f'expected {FORMAT!r}')
        known = set(cls.__dataclass_fields__) - {'source'}
        check_fields(cls, {k: v for k, v in data.items() if k not in ('format', 'source')},
                     source, GenerationConfigError)
        if not isinstance(data.get('tasks'), dict) or not data['tasks']:
            raise GenerationConfigError(f'{source}: missing key "tasks"')
        cfg = cls(**{k: v for k, v in data.items() if k in known}, source=source)
        if cfg.failures not in FAILURE_MODES:
            raise GenerationConfigError(f'{source}: failures {cfg.failures!r} not in '
                                        f'{FAILURE_MODES}')
        if cfg.region not in REGION_MODES:
            raise GenerationConfigError(f'{source}: region {cfg.region!r} not in {REGION_MODES}')
        if not 0 < cfg.image_scale <= 1:
            raise GenerationConfigError(f'{source}: image_scale must be in (0, 1]')
        for name, t in cfg.tasks.items():
            for r in ('id', 'wide'):
                reg = (t.get('regions') or {}).get(r)
                if not reg or len(reg.get('x', [])) != 2 or len(reg.get('y', [])) != 2:
                    raise GenerationConfigError(f'{source}: tasks.{name}.regions.{r} needs '
                                                f'x: [lo, hi] and y: [lo, hi]')
        return cfg

    @classmethod
    def load(cls, path: str | Path = DEFAULT_CONFIG) -> 'GenerationConfig':
        return cls.from_dict(load_yaml(path, 'generation config'), str(path))

    def with_overrides(self, **changes: Any) -> 'GenerationConfig':
        data = {**self.to_dict(), **changes}
        return GenerationConfig(**data, source=self.source)
