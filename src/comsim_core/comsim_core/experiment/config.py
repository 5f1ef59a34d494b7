"""Experiment settings (`config/experiment.yaml`): what every scale shares, and each scale's
counts. Loaded strictly (comsim_core.config): a misspelt key fails at start, not an hour in."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from comsim_core.config import field_error, load_config
from comsim_core.errors import UserError
from comsim_core.paths import resolve_config_path

DEFAULT_CONFIG = Path('config/experiment.yaml')
ARM_LETTERS = ('A', "A'", 'B', 'C', 'D', 'E')


class ExperimentConfigError(UserError, ValueError):
    """An experiment config with a missing, unknown or impossible value."""


@dataclass
class Scale:
    """One size of the experiment: how many episodes, which arms, how many rollouts."""

    real: int                       # recorded demonstrations in the arms (A' records twice as many)
    generated: int                  # generated trajectories per task in B, C, D and E
    arms: list[str]                 # letters of comsim_policy.arms.paper_arms
    rollouts: int                   # per cell
    unseen: bool                    # evaluate the held-out object variants as a third cell
    policy_config: str              # the recipe every arm trains with
    policy_steps: int               # training steps per arm (0: the recipe's max_steps)
    neural_sim_steps: int
    generated_extra: int = 10       # generated beyond `generated`, for the lab's check to reject
    video_episodes: int = 6         # generated episodes in the video table (a quarter per group)

    def __post_init__(self) -> None:
        for key in ('real', 'generated', 'rollouts', 'neural_sim_steps'):
            if getattr(self, key) < 1:
                raise field_error(ExperimentConfigError, key,
                                  f'must be >= 1, got {getattr(self, key)}')
        for key in ('policy_steps', 'generated_extra', 'video_episodes'):
            if getattr(self, key) < 0:
                raise field_error(ExperimentConfigError, key,
                                  f'must be >= 0, got {getattr(self, key)}')
        bad = [a for a in self.arms if a not in ARM_LETTERS]
        if bad or not self.arms:
            raise field_error(ExperimentConfigError, 'arms',
                              f'expected some of {list(ARM_LETTERS)}, got {self.arms}')

    @property
    def recorded(self) -> int:
        """Demonstrations to record per task: twice ``real`` when arm A' is in."""
        return 2 * self.real if "A'" in self.arms else self.real


@dataclass
class ExperimentConfig:
    tasks: list[str]
    scales: dict[str, Scale]
    unseen_variants: dict[str, list[str]] = field(default_factory=dict)
    camera_hz: float = 10.0             # generated episodes' camera rate: the policy's rate
    appearance_randomisation: bool = True
    pair_appearance_variants: int = 0   # more replays of each demo, twin looks redrawn
    generated_share: float = 0.5        # share of co-trained arms' samples from generated data
    record_seed: int = 0                # the demos' layout seeds: record_seed, record_seed + 1...
    generation_seed: int = 5000
    eval_seed: int = 1000
    calibration_views: int = 20
    neural_sim_config: str = 'config/neural_sim.yaml'
    # the experiment's changes to that config (its keys), so the component's defaults stay
    # the component's: e.g. {object_loss_weight: 64}
    neural_sim_overrides: dict = field(default_factory=dict)
    neural_sim_sample_steps: int = 4
    source: str = '<dict>'

    def __post_init__(self) -> None:
        if not self.tasks:
            raise field_error(ExperimentConfigError, 'tasks', 'name at least one task')
        if not self.scales:
            raise field_error(ExperimentConfigError, 'scales', 'define at least one scale')
        if not 0 < self.generated_share < 1:
            raise field_error(ExperimentConfigError, 'generated_share',
                              f'must be in (0, 1), got {self.generated_share}')
        if self.pair_appearance_variants < 0:
            raise field_error(ExperimentConfigError, 'pair_appearance_variants',
                              f'must be >= 0, got {self.pair_appearance_variants}')
        if self.camera_hz <= 0:
            raise field_error(ExperimentConfigError, 'camera_hz',
                              f'must be > 0, got {self.camera_hz}')
        for key in ('record_seed', 'generation_seed', 'eval_seed'):
            if getattr(self, key) < 0:
                raise field_error(ExperimentConfigError, key,
                                  f'must be >= 0, got {getattr(self, key)}')

    def scale(self, name: str) -> Scale:
        if name not in self.scales:
            raise ExperimentConfigError(f'{self.source}: scales: no scale {name!r}; '
                                        f'configured: {sorted(self.scales)}')
        return self.scales[name]

    def check_seeds(self, scale: Scale) -> None:
        """A policy must be rolled out on layouts it was not shown: the recorded demos' layout
        seeds (the bench lab's, as the evaluation's) may not overlap the evaluation's. The
        generated episodes draw theirs from a hash of ``generation_seed`` (twin generation)."""
        start, count = self.record_seed, scale.recorded * len(self.tasks)
        first, n = self.eval_seed, scale.rollouts
        if start < first + n and first < start + count:
            raise ExperimentConfigError(
                f'{self.source}: record_seed: the demos\' layout seeds {start}..'
                f'{start + count - 1} overlap the evaluation\'s (eval_seed) {first}..'
                f'{first + n - 1}; move one of them')

    def variants(self, task: str) -> list[str]:
        """The task's object variants held out of every training set."""
        return list(self.unseen_variants.get(task, []))

    @classmethod
    def load(cls, path: str | Path = DEFAULT_CONFIG) -> ExperimentConfig:
        path = resolve_config_path(path)
        config = load_config(path, cls, what='experiment config', error=ExperimentConfigError)
        config.source = str(path)
        return config
