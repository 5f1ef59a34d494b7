"""From ``--data DIR[:source]`` arguments to train/val episode arrays and fitted stats.

Separate from the loop so benches and tests build exactly the data the CLI trains on.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from comsim_core.episodes import find_episodes, read_meta

from ..action_space import action_space
from ..config import PolicyConfig
from ..data.cache import FrameCache
from ..data.dataset import frame_stride
from ..data.episode_arrays import (
    SOURCES,
    EpisodeArrays,
    EpisodeDataError,
    _reorder,
    episode_success,
)
from ..data.mixture import select_episodes, split_by_episode


@dataclass
class DataSpec:
    """A directory of episodes (or one episode) and an optional forced source."""

    path: Path
    source: str | None = None

    @classmethod
    def parse(cls, text: str) -> DataSpec:
        """'DIR' or 'DIR:source' with source in real | sim | pseudo_real."""
        head, sep, tail = text.rpartition(':')
        if sep and tail in SOURCES:
            return cls(Path(head), tail)
        return cls(Path(text), None)


@dataclass
class PreparedData:
    train: list[EpisodeArrays]
    val: list[EpisodeArrays]
    summary: dict = field(default_factory=dict)


def of_tasks(paths: Sequence[Path], tasks: Sequence[str]) -> list[Path]:
    """The episodes of ``paths`` whose metadata names one of ``tasks`` (all when empty)."""
    return [p for p in paths if read_meta(p).task in tasks] if tasks else list(paths)


def load_all(specs: list[DataSpec], config: PolicyConfig, cache: FrameCache,
             skipped: list[str] | None = None) -> list[EpisodeArrays]:
    """Every episode under every spec, decoded through the cache (in a stable order).

    Episodes of tasks outside ``config.tasks`` (when it names any) are left out. Only
    successful demonstrations are kept (``episode_success``: ``success: true`` on a
    complete episode, or confirmed by a person); the rest (failed, recovered, no verdict) are
    left out unless ``config.train.include_failed``, and their names appended to ``skipped``.
    """
    episodes = []
    for spec in specs:
        paths = find_episodes(spec.path)
        if not paths:
            raise EpisodeDataError(f'no episodes under {spec.path}')
        if config.tasks:
            paths = of_tasks(paths, config.tasks)
            if not paths:
                raise EpisodeDataError(f'no episodes of tasks {config.tasks} under {spec.path}')
        if not config.train.include_failed:
            failed = [p for p in paths if episode_success(p) is not True]
            paths = [p for p in paths if p not in failed]
            if skipped is not None:
                skipped += [p.name for p in failed]
            if not paths:
                raise EpisodeDataError(f'all {len(failed)} episodes under {spec.path} are '
                                       'marked failed or not confirmed successful (need '
                                       'success: true on a complete episode, or '
                                       '`comsim-recover --confirm-success NAME EPISODE`); '
                                       'set train.include_failed to train on them anyway')
        episodes += [cache.get(p, spec.source) for p in paths]
    return in_action_space(episodes, config)


def in_action_space(episodes: list[EpisodeArrays], config: PolicyConfig
                    ) -> list[EpisodeArrays]:
    """The episodes' states and actions in ``config.action_space`` (the cache keeps the
    recorded joints, so one cache serves both spaces)."""
    if config.action_space == 'joint':
        return episodes
    space = action_space(config.action_space, config.joint_names, config.robot_model)
    return [dataclasses.replace(e, state=space.encode(e.state), action=space.encode(e.action))
            for e in episodes]


def prepare(specs: list[DataSpec], config: PolicyConfig, cache: FrameCache) -> PreparedData:
    """Load, apply mixture counts, split by episode, and fill the config's data facts.

    Fills ``config.camera_sizes`` (native sizes, preferring real episodes: the robot is real)
    in place, and checks every episode is filmed at a whole multiple of ``config.control_hz``
    (``frame_stride``).
    """
    failed: list[str] = []
    episodes = load_all(specs, config, cache, failed)
    tc = config.train
    keep = select_episodes([e.source for e in episodes], tc.mixture_counts, tc.seed)
    episodes = [episodes[i] for i in keep]
    if not episodes:
        raise EpisodeDataError('no episodes left after applying mixture_counts')
    tr, va = split_by_episode([e.source for e in episodes], tc.val_fraction, tc.seed)
    train = [episodes[i] for i in tr]
    val = [episodes[i] for i in va]
    ranked = sorted(episodes, key=lambda e: e.source != 'real')
    if not config.camera_sizes:
        config.camera_sizes = {cam: list(ranked[0].native_sizes[cam])
                               for cam in config.camera_topics}
    strides = Counter(frame_stride(e, config.control_hz) for e in episodes)
    summary = {'episodes': len(episodes), 'train_episodes': len(train),
               'val_episodes': len(val), 'frames': int(sum(len(e) for e in episodes)),
               'sources': dict(Counter(e.source for e in episodes)),
               'commands_used': int(sum(e.commands_used for e in episodes)),
               'failed_skipped': len(failed),
               'frame_strides': {int(k): v for k, v in sorted(strides.items())}}
    return PreparedData(train, val, summary)


def motion(specs: list[DataSpec], config: PolicyConfig) -> tuple[np.ndarray, np.ndarray]:
    """Every joint position and command (policy joint order) of the episodes under ``specs``
    (of ``config.tasks`` when it names any), read without their images: what the normaliser's
    range must cover."""
    from comsim_core.episodes import Episode  # noqa: PLC0415 - rosbags only to read bags

    states, actions = [], []
    for spec in specs:
        paths = of_tasks(find_episodes(spec.path), config.tasks)
        if not paths:
            raise EpisodeDataError(f'train.normalization_data: no episodes under {spec.path}'
                                   + (f' of tasks {config.tasks}' if config.tasks else ''))
        for path in paths:
            with Episode.open(path) as ep:
                js = ep.joint_states(config.joint_topic)
                states.append(js.position[:, _reorder(js.names, config.joint_names,
                                                      config.joint_topic, path)])
                if config.command_topic in ep.topics:
                    cmd = ep.commands(config.command_topic)
                    actions.append(cmd.position[:, _reorder(cmd.names, config.joint_names,
                                                            config.command_topic, path)])
    states, actions = np.concatenate(states), np.concatenate(actions or states)
    if config.action_space == 'joint':
        return states, actions
    space = action_space(config.action_space, config.joint_names, config.robot_model)
    return space.encode(states), space.encode(actions)


def stacked(episodes: list[EpisodeArrays], field_name: str) -> np.ndarray:
    return np.concatenate([np.asarray(getattr(e, field_name)) for e in episodes])
