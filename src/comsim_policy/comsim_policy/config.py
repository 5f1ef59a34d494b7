"""``PolicyConfig``: everything needed to rebuild a policy, saved next to its weights.

One YAML file holds the model shape, the observation contract (joint names, camera topics and
their native sizes, the resized/cropped image size, horizons, control rate) and the training
settings, so a checkpoint directory is self-describing and a deploy node can check that the
robot it runs on matches what the policy was trained on.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from comsim_core import config as core_config
from comsim_core.config import load_config

from .action_space import ACTION_SPACES, POSE_DIM

DEFAULT_JOINTS = ['joint1', 'joint2', 'joint3', 'joint4', 'joint5', 'joint6', 'gripper']
DEFAULT_CAMERAS = ['/cameras/front/image_raw', '/cameras/side/image_raw']
COMMAND_TOPIC = '/joint_trajectory_controller/joint_trajectory'
NORMALIZATIONS = ('limits', 'data')
PRECISIONS = ('fp32', 'bf16')      # train.precision: the forward pass's (autocast) dtype


class ConfigError(core_config.ConfigError):
    """A policy config file or dict is malformed."""


@dataclass
class ModelConfig:
    """Network sizes. Defaults are the small CPU model; the paper uses (256, 512, 1024)."""

    down_dims: list[int] = field(default_factory=lambda: [64, 128, 256])
    kernel_size: int = 5
    n_groups: int = 8
    diffusion_step_embed_dim: int = 64
    vision_width: int = 16          # ResNet-18 stem width (64 in the standard ResNet-18)
    num_keypoints: int = 32         # spatial-softmax keypoints per camera
    share_vision_encoder: bool = False
    # ReLU after the encoders' output layer. Off (robomimic/Chi et al.: a plain linear): with
    # it, 80-90 % of the image features of the main-job policies were dead (always 0), which
    # keeps the image gradient from ever reviving them. Checkpoints saved before this option
    # existed load with True (checkpoint.load_config), so they compute what they did.
    encoder_head_relu: bool = False
    # ResNet stages kept (1-4); fewer = a finer map for the spatial softmax (see ResNetEncoder).
    vision_stages: int = 4
    # How many of the window's latest joint states condition the network (null = all
    # n_obs_steps, 0 = none). Two states give the joint velocity, which lets a policy copy its
    # own motion instead of reading the cameras (the "copycat" shortcut).
    state_steps: int | None = None


@dataclass
class SchedulerConfig:
    """DDPM for training, DDIM for inference (diffusers schedulers)."""

    num_train_timesteps: int = 100
    beta_schedule: str = 'squaredcos_cap_v2'
    prediction_type: str = 'epsilon'
    num_inference_steps: int = 10
    clip_sample: bool = True


@dataclass
class TrainConfig:
    """Optimisation and data settings."""

    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 1e-6
    max_steps: int = 2000
    warmup_steps: int = 100
    ema_decay: float = 0.995
    ema_warmup_steps: int = 50
    val_fraction: float = 0.1
    val_every: int = 200
    checkpoint_every: int = 500
    log_every: int = 50
    seed: int = 0
    num_workers: int = 0
    mixture: dict[str, float] = field(default_factory=dict)   # source -> weight (empty: uniform)
    mixture_counts: dict[str, int] = field(default_factory=dict)  # source -> episodes used
    cache_dir: str = 'output/policy_cache'
    device: str = 'auto'
    include_failed: bool = False   # train on episodes the recorder marked success: false
    # More episodes (DIR[:source]) whose joint positions and commands join the 'data'
    # normaliser's min/max, not the training: arms compared with each other share one range
    # (fit on the union of their data), so none is forbidden a motion another one learns.
    normalization_data: list[str] = field(default_factory=list)
    # The forward pass's precision: fp32, or bf16 autocast (weights, optimiser and gradients
    # stay fp32). On a CPU with bf16 instructions (AVX512-BF16, AMX) a step of the shipped
    # recipe is ~1.3x faster (bench/policy_train_step.py --bf16); on a GPU, bf16 is the norm.
    precision: str = 'fp32'


@dataclass
class PolicyConfig:
    """The whole policy description (``to_yaml``/``from_yaml`` round-trip exactly)."""

    joint_names: list[str] = field(default_factory=lambda: list(DEFAULT_JOINTS))
    camera_topics: list[str] = field(default_factory=lambda: list(DEFAULT_CAMERAS))
    # native (height, width) per camera as recorded; filled from the data when empty
    camera_sizes: dict[str, list[int]] = field(default_factory=dict)
    joint_topic: str = '/joint_states'
    command_topic: str | None = COMMAND_TOPIC
    image_size: list[int] = field(default_factory=lambda: [72, 96])   # resize target (H, W)
    crop_size: list[int] = field(default_factory=lambda: [64, 80])    # random/centre crop (H, W)
    n_obs_steps: int = 2
    horizon: int = 16
    n_action_steps: int = 8
    # The rate the policy acts at, independent of the cameras: each window samples frames
    # 1/control_hz apart (episodes must be filmed at a whole multiple of it), and every frame
    # starts a window, so a 30 Hz camera gives three phase offsets of the 10 Hz windows.
    control_hz: float = 10.0
    # Tasks this checkpoint was trained for (episodes of other tasks are left out of training);
    # empty: every task in the data, without telling the network which one it faces.
    tasks: list[str] = field(default_factory=list)
    # How states and actions map to [-1, 1]: 'data' = min/max of the training data (fit it on
    # data that covers every motion the policy must make: min/max of demos from one region
    # forbids the joint angles another region needs); 'limits' = the robot's joint limits
    # (nothing forbidden, but coarser: on the overfit test's episodes, whose motion spans a
    # tenth of the limits, 400 steps reached an open-loop error 2.6x holding still vs 0.64x
    # with 'data', so it needs a larger budget).
    normalization: str = 'data'
    robot_model: str = ''      # MJCF/URDF for 'limits' and end_effector; '' = the ComSim arm
    # What states and actions are (action_space.py): 'joint' positions as recorded, or
    # 'end_effector': the tool's position and yaw (pointing down) and the gripper, through the
    # robot model; the runner turns predicted poses into joint targets by IK.
    action_space: str = 'joint'
    model: ModelConfig = field(default_factory=ModelConfig)
    scheduler: SchedulerConfig = field(default_factory=SchedulerConfig)
    train: TrainConfig = field(default_factory=TrainConfig)

    def __post_init__(self) -> None:
        self.validate()

    @property
    def action_dim(self) -> int:
        """Numbers per action (and per state): one per joint, or the tool pose + gripper."""
        return POSE_DIM + 1 if self.action_space == 'end_effector' else len(self.joint_names)

    @property
    def action_names(self) -> list[str]:
        """Each action number's name (``action_space.action_names``)."""
        from .action_space import action_names  # noqa: PLC0415

        return action_names(self.action_space, self.joint_names)

    @property
    def state_dim(self) -> int:
        """States live in the actions' space (the current pose beside the targets)."""
        return self.action_dim

    @property
    def camera_keys(self) -> list[str]:
        """Module-safe names for the cameras (topics contain '/')."""
        return [camera_key(t) for t in self.camera_topics]

    def validate(self) -> None:
        """Raise ConfigError on sizes that cannot work together."""
        if not self.joint_names:
            raise ConfigError('joint_names is empty')
        if not self.camera_topics:
            raise ConfigError('camera_topics is empty: the policy needs at least one camera')
        if len(self.image_size) != 2 or len(self.crop_size) != 2:
            raise ConfigError('image_size and crop_size are [height, width]')
        if any(c > i for c, i in zip(self.crop_size, self.image_size, strict=True)):
            raise ConfigError(f'crop_size {self.crop_size} exceeds image_size {self.image_size}')
        if not 1 <= self.n_obs_steps <= self.horizon:
            raise ConfigError(f'n_obs_steps {self.n_obs_steps} must be in [1, horizon]')
        if self.normalization not in NORMALIZATIONS:
            raise ConfigError(f'normalization {self.normalization!r}: expected one of '
                              f'{list(NORMALIZATIONS)}')
        if self.action_space not in ACTION_SPACES:
            raise ConfigError(f'action_space {self.action_space!r}: expected one of '
                              f'{list(ACTION_SPACES)}')
        if self.action_space == 'end_effector' and self.normalization == 'limits':
            raise ConfigError('normalization limits is a joint range: with action_space '
                              'end_effector use normalization data (fitted on data covering '
                              'the workspace)')
        if self.train.precision not in PRECISIONS:
            raise ConfigError(f'train.precision {self.train.precision!r}: expected one of '
                              f'{list(PRECISIONS)}')
        if not self.control_hz > 0:
            raise ConfigError(f'control_hz {self.control_hz} must be > 0')
        if self.n_obs_steps - 1 + self.n_action_steps > self.horizon:
            raise ConfigError(f'n_obs_steps - 1 + n_action_steps ({self.n_obs_steps - 1} + '
                              f'{self.n_action_steps}) exceeds horizon {self.horizon}')
        if not 1 <= self.model.vision_stages <= 4:
            raise ConfigError(f'model.vision_stages {self.model.vision_stages} must be 1-4')
        if self.model.state_steps is not None and not \
                0 <= self.model.state_steps <= self.n_obs_steps:
            raise ConfigError(f'model.state_steps {self.model.state_steps} must be null or '
                              f'0-n_obs_steps ({self.n_obs_steps})')
        down = 2 ** (len(self.model.down_dims) - 1)
        if self.horizon % down:
            raise ConfigError(f'horizon {self.horizon} must be divisible by {down} '
                              f'({len(self.model.down_dims)} UNet levels)')

    # ------------------------------------------------------------------ (de)serialisation
    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any], name: str = '<dict>') -> PolicyConfig:
        """Build from a dict; unknown keys are errors (typos must not pass silently)."""
        return load_config(data, cls, name=name, error=ConfigError)

    def to_yaml(self, path: Path | str) -> None:
        Path(path).write_text(yaml.safe_dump(self.to_dict(), sort_keys=False), encoding='utf8')

    @classmethod
    def from_yaml(cls, path: Path | str) -> PolicyConfig:
        path = Path(path)
        if not path.exists():
            raise ConfigError(f'no policy config at {path}')
        return load_config(path, cls, what='policy config', error=ConfigError)


def camera_key(topic: str) -> str:
    """'/cameras/front/image_raw' -> 'cameras_front_image_raw' (usable as a module name)."""
    return topic.strip('/').replace('/', '_') or 'camera'
