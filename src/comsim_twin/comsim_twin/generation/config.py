"""Generation settings (`config/twin/generation.yaml`), validated once at load."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from comsim_core.config import load_config
from comsim_core.errors import UserError, load_yaml
from comsim_core.paths import resolve_config_path

FORMAT = 'comsim-generation/1'
DEFAULT_CONFIG = Path('config/twin/generation.yaml')   # in the workspace root
REGIONS = ('id', 'wide')          # every task states these
OPTIONAL_REGIONS = ('workspace',)  # checked where given; needed when the run lays out there


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
    failures: Literal['label', 'discard'] = 'label'
    region: Literal['id', 'wide', 'workspace', 'mix'] = 'id'
    wide_fraction: float = 0.3
    # area: the first task object's start spread evenly over the region (cells of
    # coverage_cell_m); layout: as the task's own layout rule draws it (``randomise``)
    coverage: Literal['area', 'layout'] = 'layout'
    coverage_cell_m: float = 0.05
    storage: str = 'mcap'
    distro: str = 'kilted'
    workers: int = 0
    llm: dict[str, Any] = field(default_factory=dict)
    source: str = '<dict>'

    def __post_init__(self) -> None:
        if not self.tasks:
            raise GenerationConfigError(f'{self.source}: tasks: no task configured')
        if not 0 < self.image_scale <= 1:
            raise GenerationConfigError(f'{self.source}: image_scale must be in (0, 1]')
        if not self.coverage_cell_m > 0:
            raise GenerationConfigError(f'{self.source}: coverage_cell_m must be > 0 m, got '
                                        f'{self.coverage_cell_m}')
        for name, t in self.tasks.items():
            regions = t.get('regions') or {}
            for r in (*REGIONS, *(r for r in OPTIONAL_REGIONS
                                  if r in regions or r == self.region)):
                self._check_region(f'tasks.{name}.regions.{r}', regions.get(r))

    def _check_region(self, key: str, reg: Any) -> None:
        where = f'{self.source}: {key}'
        if not isinstance(reg, dict) or not all(
                isinstance(reg.get(a), (list, tuple)) and len(reg[a]) == 2 for a in ('x', 'y')):
            raise GenerationConfigError(f'{where} needs x: [lo, hi] and y: [lo, hi]')
        try:
            (x0, x1), (y0, y1) = (float(v) for v in reg['x']), (float(v) for v in reg['y'])
            reach = float(reg.get('reach', float('inf')))
        except (TypeError, ValueError):
            raise GenerationConfigError(f'{where}: x, y and reach must be numbers') from None
        if not (x0 < x1 and y0 < y1):
            raise GenerationConfigError(f'{where}: x and y need lo < hi, got {reg}')
        unknown = sorted(set(reg) - {'x', 'y', 'reach'})
        if unknown:
            raise GenerationConfigError(f'{where}: unknown keys {unknown}; expected x, y, reach')
        if reach <= 0:
            raise GenerationConfigError(f'{where}: reach must be > 0 m, got {reach}')

    def task(self, name: str) -> dict[str, Any]:
        if name not in self.tasks:
            raise GenerationConfigError(f'{self.source}: no task {name!r}; configured: '
                                        f'{sorted(self.tasks)}')
        return self.tasks[name]

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != 'source'}

    @classmethod
    def from_dict(cls, data: Any, source: str = '<dict>') -> 'GenerationConfig':
        if isinstance(data, dict):
            if data.get('format', FORMAT) != FORMAT:
                raise GenerationConfigError(f'{source}: format {data.get("format")!r}, '
                                            f'expected {FORMAT!r}')
            data = {**{k: v for k, v in data.items() if k != 'format'}, 'source': source}
        return load_config(data, cls, name=source, error=GenerationConfigError)

    @classmethod
    def load(cls, path: str | Path = DEFAULT_CONFIG) -> 'GenerationConfig':
        """`path` as given, else in the workspace root (any current folder reads the same)."""
        path = resolve_config_path(path)
        return cls.from_dict(load_yaml(path, 'generation config'), str(path))

    def with_overrides(self, **changes: Any) -> 'GenerationConfig':
        data = {**self.to_dict(), **changes}
        return GenerationConfig(**data, source=self.source)
