"""``NeuralSimConfig``: every shape and training knob of the neural simulator, in one YAML.

The config is saved next to the weights so a checkpoint always knows the clip length, resolution,
action dimension and architecture it was trained for (and refuses to load under another).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from comsim_core.config import load_config
from comsim_core.errors import load_yaml

from .errors import CheckpointMismatchError, ConfigError

CONFIG_NAME = 'neural_sim.yaml'

# Fields that change the network's weights' shapes or meaning: a checkpoint must match them.
ARCH_FIELDS = ('frames', 'context_frames', 'height', 'width', 'channels', 'space',
               'latent_channels', 'latent_downsample', 'width_dim', 'depth', 'heads',
               'patch_size', 'patch_size_t', 'action_dim', 'prediction', 'num_train_timesteps',
               'cameras', 'skip_kernel', 'skip_channels')


@dataclass
class NeuralSimConfig:
    """Shapes, architecture, condition dropout and training settings (see config/neural_sim.yaml).

    ``frames`` is the window length the network denoises; the first ``context_frames`` of a
    window may be given as already-generated frames so long episodes stay consistent.
    """

    # clip and image space
    frames: int = 8
    context_frames: int = 2
    height: int = 32
    width: int = 40
    channels: int = 3
    space: str = 'pixel'                # pixel | latent
    autoencoder_path: str | None = None  # diffusers AutoencoderKL directory (space: latent)
    latent_channels: int = 4
    latent_downsample: int = 8
    # transformer
    width_dim: int = 64
    depth: int = 4
    heads: int = 4
    patch_size: int = 4
    patch_size_t: int = 1
    action_dim: int = 7
    # diffusion
    prediction: str = 'sample'   # sample (x0) | epsilon (both DDPM/DDIM) | flow (flow matching)
    skip_from: str = 'noisy'     # the pixel skip's start: noisy | sim (x0 = sim frame + residual)
    skip_kernel: int = 1         # 1: per-pixel linear skip; k > 1: plus two k x k convolutions
    skip_channels: int = 16      # width of that local convolution stack
    sim_detail: bool = False     # translations keep the sim's detail above height x width
    num_train_timesteps: int = 1000
    # condition dropout (each independently, per sample)
    p_drop_action: float = 0.15
    p_drop_sim: float = 0.15
    p_drop_context: float = 0.5
    # training
    batch_size: int = 8
    lr: float = 3e-4
    weight_decay: float = 0.01
    ema_decay: float = 0.999
    steps: int = 2000
    grad_clip: float = 1.0
    # The loss weight of the pixels where the twin's render shows an object (paired episodes
    # replayed with object masks, ``/sim/cameras/<cam>/objects``), against 1 for the rest: a
    # 3 cm card is ~1 % of a frame, so an unweighted loss spends almost nothing on keeping it.
    # 1: every pixel alike (and no masks needed).
    object_loss_weight: float = 1.0
    log_every: int = 50
    sample_every: int = 500
    save_every: int = 500
    seed: int = 0
    # data
    cameras: list[str] = field(default_factory=lambda: ['front'])   # one network, all cameras
    command_topic: str = '/joint_trajectory_controller/joint_trajectory'
    clip_stride: int = 2
    # action normalisation (filled from the data at training time)
    action_mean: list[float] | None = None
    action_std: list[float] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.validate()

    # -- derived shapes -------------------------------------------------------------------
    @property
    def model_channels(self) -> int:
        """Channels of the space the transformer denoises (RGB or latent)."""
        return self.latent_channels if self.space == 'latent' else self.channels

    @property
    def model_hw(self) -> tuple[int, int]:
        """Height and width of the space the transformer denoises."""
        if self.space == 'latent':
            return self.height // self.latent_downsample, self.width // self.latent_downsample
        return self.height, self.width

    def validate(self) -> None:
        """Raise ``ConfigError`` for values no model can be built from."""
        if self.space not in ('pixel', 'latent'):
            raise ConfigError(f"space must be 'pixel' or 'latent', got {self.space!r}")
        if self.skip_from not in ('noisy', 'sim'):
            raise ConfigError(f"skip_from must be 'noisy' or 'sim', got {self.skip_from!r}")
        if self.skip_from == 'sim' and self.prediction != 'sample':
            raise ConfigError("skip_from: sim starts the network at x0 = the sim frame, which "
                              "needs prediction: sample")
        if self.skip_kernel < 1 or self.skip_kernel % 2 == 0:
            raise ConfigError(f'skip_kernel must be an odd number >= 1, got {self.skip_kernel}')
        if self.skip_channels < 1:
            raise ConfigError(f'skip_channels must be >= 1, got {self.skip_channels}')
        if self.prediction not in ('epsilon', 'sample', 'flow'):
            raise ConfigError(f"prediction must be 'epsilon', 'sample' or 'flow', got "
                              f"{self.prediction!r}")
        for name in ('frames', 'height', 'width', 'channels', 'width_dim', 'depth', 'heads',
                     'patch_size', 'patch_size_t', 'action_dim', 'batch_size'):
            if int(getattr(self, name)) < 1:
                raise ConfigError(f'{name} must be >= 1, got {getattr(self, name)}')
        if not 0 <= self.context_frames < self.frames:
            raise ConfigError(f'context_frames must be in [0, frames={self.frames}), '
                              f'got {self.context_frames}')
        if self.width_dim % self.heads:
            raise ConfigError(f'width_dim {self.width_dim} is not divisible by heads {self.heads}')
        h, w = self.model_hw
        if h % self.patch_size or w % self.patch_size or h == 0 or w == 0:
            raise ConfigError(f'{self.space} resolution {h}x{w} is not a multiple of '
                              f'patch_size {self.patch_size}')
        if self.frames % self.patch_size_t:
            raise ConfigError(f'frames {self.frames} not a multiple of patch_size_t '
                              f'{self.patch_size_t}')
        if not self.object_loss_weight > 0:
            raise ConfigError(f'object_loss_weight must be > 0, got {self.object_loss_weight}')
        for name in ('p_drop_action', 'p_drop_sim', 'p_drop_context'):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ConfigError(f'{name} must be a probability, got {getattr(self, name)}')
        if not self.cameras or len(set(self.cameras)) != len(self.cameras):
            raise ConfigError(f'cameras must be a non-empty list of distinct names, got '
                              f'{self.cameras}')
        for name in ('action_mean', 'action_std'):
            v = getattr(self, name)
            if v is not None and len(v) != self.action_dim:
                raise ConfigError(f'{name} has {len(v)} entries; action_dim is {self.action_dim}')

    # -- (de)serialisation ----------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = 'neural-sim config') -> NeuralSimConfig:
        if isinstance(data, dict) and 'camera' in data and 'cameras' not in data:
            data = {**data, 'cameras': [data['camera']]}   # configs written before multi-camera
            del data['camera']
        return load_config(data, cls, name=source, error=ConfigError)

    @classmethod
    def from_yaml(cls, path: str | Path) -> NeuralSimConfig:
        """Load a YAML file (a plain mapping, or one nested under ``neural_sim:``)."""
        path = Path(path)
        if path.is_dir():
            path = path / CONFIG_NAME
        if not path.is_file():
            raise FileNotFoundError(f'no neural-sim config at {path}')
        data = load_yaml(path, 'neural-sim config')
        if isinstance(data, dict) and set(data) == {'neural_sim'}:
            data = data['neural_sim']
        return cls.from_dict(data, str(path))

    def save(self, directory: str | Path) -> Path:
        """Write ``neural_sim.yaml`` into ``directory`` (created); returns the file path."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        out = directory / CONFIG_NAME
        out.write_text(yaml.safe_dump(self.to_dict(), sort_keys=False))
        return out

    def replace(self, **changes: Any) -> NeuralSimConfig:
        return dataclasses.replace(self, **changes)

    def check_compatible(self, other: NeuralSimConfig, what: str = 'checkpoint') -> None:
        """Raise ``CheckpointMismatchError`` naming each architecture field that differs."""
        diff = {k: (getattr(other, k), getattr(self, k)) for k in ARCH_FIELDS
                if getattr(self, k) != getattr(other, k)}
        if diff:
            lines = ', '.join(f'{k}: {what} has {a!r}, config has {b!r}'
                              for k, (a, b) in diff.items())
            raise CheckpointMismatchError(f'{what} was trained for another config ({lines})')
