"""Decode one recorded episode into the arrays a policy trains on.

Per frame of the first camera: every camera's image resized to the policy's image size, the
joint positions (state) and the commanded joint targets in force (action), both in the
policy's joint order. A paired episode (ground truth, replays) is read through its
``/real/...`` camera streams, under the policy's topic names. Where no command is in force
yet (or the command topic is absent from a sim/pseudo-real episode), the action falls back to
the next frame's joint positions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from comsim_core.episodes import EpisodeMeta
from comsim_core.episodes.sidecar import counts_as_success, read_sidecar
from comsim_core.errors import UserError

from ..config import DEFAULT_JOINTS, PolicyConfig
from ..preprocessing import ImagePreprocessor

SOURCES = ('real', 'sim', 'pseudo_real', 'gt')   # gt: the bench lab filming a sim episode


class EpisodeDataError(UserError, ValueError):
    """An episode cannot be turned into training arrays (names the episode and why)."""


@dataclass
class EpisodeArrays:
    """One episode, decoded; images keyed by camera topic, (N, H, W, 3) uint8."""

    name: str
    source: str
    images: dict[str, np.ndarray]
    state: np.ndarray      # (N, J) float32
    action: np.ndarray     # (N, J) float32
    t_ns: np.ndarray       # (N,) int64
    native_sizes: dict[str, list[int]] = field(default_factory=dict)   # topic -> [H, W]
    commands_used: int = 0   # frames whose action is a recorded command (not the fallback)

    def __len__(self) -> int:
        return int(self.state.shape[0])

    @property
    def rate_hz(self) -> float | None:
        if len(self) < 2:
            return None
        return float((len(self) - 1) / ((self.t_ns[-1] - self.t_ns[0]) / 1e9))


def episode_source(metadata: dict, override: str | None = None) -> str:
    """real | sim | pseudo_real from ``override``, episode.yaml ``source``, or 'real'."""
    src = str(override or EpisodeMeta.from_sidecar(metadata).source or 'real')
    if src not in SOURCES:
        raise EpisodeDataError(f'unknown episode source {src!r}; expected one of {SOURCES}')
    return src


def camera_stream(topics, camera_topic: str) -> str:
    """The stream that holds ``camera_topic``'s images: itself, its compressed stream (topic +
    ``/compressed``, recorded from image_transport: the checkpoint keeps the raw name, which the
    policy node's ``image_transport: compressed`` turns back into the compressed one), or a
    paired episode's real one (``/real`` + topic); the reader names a missing topic when none
    exists."""
    for candidate in (camera_topic, f'{camera_topic}/compressed', f'/real{camera_topic}'):
        if candidate in topics:
            return candidate
    return camera_topic


def _reorder(names: list[str] | None, wanted: list[str], what: str, path: Path) -> list[int]:
    names = list(names) if names is not None else list(DEFAULT_JOINTS)
    missing = [n for n in wanted if n not in names]
    if missing:
        raise EpisodeDataError(f'{path}: {what} lacks joints {missing} (has {names})')
    return [names.index(n) for n in wanted]


def load_episode_arrays(path: Path | str, config: PolicyConfig, source: str | None = None,
                        tolerance_s: float | None = None) -> EpisodeArrays:
    """Decode ``path`` with the shared episode reader (slow: use ``FrameCache``)."""
    from comsim_core.episodes import Episode  # noqa: PLC0415 - rosbags only to decode

    path = Path(path)
    with Episode.open(path) as ep:
        joint_names = ep.joint_states(config.joint_topic).names
        j_order = _reorder(joint_names, config.joint_names, config.joint_topic, path)
        cmd_topic = config.command_topic if config.command_topic in ep.topics else None
        c_order = None
        if cmd_topic is not None:
            c_order = _reorder(ep.commands(cmd_topic).names, config.joint_names, cmd_topic, path)
        cameras = [camera_stream(ep.topics, t) for t in config.camera_topics]
        pre = ImagePreprocessor.from_config(config)
        images: dict[str, list[np.ndarray]] = {c: [] for c in config.camera_topics}
        native: dict[str, list[int]] = {}
        states, cmds, ts = [], [], []
        stream = ep.frames(cameras, config.joint_topic, cmd_topic, tolerance_s,
                           skip_unaligned=True)
        topic_of = dict(zip(cameras, config.camera_topics, strict=True))
        for frame in stream:
            for stream_topic, img in frame.images.items():
                cam = topic_of[stream_topic]
                native.setdefault(cam, [int(img.shape[0]), int(img.shape[1])])
                images[cam].append(pre.resize(img))
            states.append(frame.joint_position[j_order])
            cmd = frame.command
            ok = cmd is not None and c_order is not None and cmd.shape[0] > max(c_order)
            cmds.append(cmd[c_order] if ok else None)
            ts.append(frame.t_ns)
        src = episode_source(ep.metadata, source)
    if len(states) < 2:
        raise EpisodeDataError(f'{path}: only {len(states)} aligned frames '
                               f'({stream.skipped} skipped: {stream.skip_reasons[:1]})')
    state = np.stack(states).astype(np.float32)
    action = np.empty_like(state)
    used = 0
    for i, cmd in enumerate(cmds):
        if cmd is not None and np.isfinite(cmd).all():
            action[i] = cmd
            used += 1
        else:
            action[i] = state[min(i + 1, len(state) - 1)]
    return EpisodeArrays(path.name, src, {c: np.stack(v) for c, v in images.items()}, state,
                         action, np.asarray(ts, dtype=np.int64), native, used)


def episode_success(path: Path | str) -> bool | None:
    """Whether the episode is a successful demonstration to imitate; None without episode.yaml.

    True only for ``success: true`` on an episode that closed ``complete``, or one a person
    confirmed (``success_confirmed_by``, set by ``comsim-recover --confirm-success NAME``).
    A failed (disk full), interrupted or recovered episode is False whatever the operator
    said before the damage: its bag may miss the part that made it a success.
    """
    side = read_sidecar(Path(path))
    return None if side is None else counts_as_success(side)
