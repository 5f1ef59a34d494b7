"""``EpisodeMeta``: what an episode is, as typed fields of the sidecar's ``metadata`` block.

(task, seed, region, variant) is what the bench lab resets to, so it reproduces the episode's
starting layout; ``source`` says how the pictures were made (``SOURCES``: ``real``: filmed in the
lab, ``sim``: the twin's generator, ``pseudo_real``: sim translated by the neural simulator,
``gt``: the bench lab filming a sim episode's motion, its ground truth); ``operator`` who or what
drove the arm. The sidecar's ``notes`` stay free text for people, never parsed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from .errors import EpisodeError
from .sidecar import read_sidecar, sidecar_path

UNSET_SEED = -1   # the seed parameter's "not recorded" (lab seeds are >= 0)
SOURCES = ('real', 'sim', 'pseudo_real', 'gt')   # the values of ``source`` (see above)


@dataclass(frozen=True)
class EpisodeMeta:
    """Typed episode metadata; empty strings and ``seed=None`` mean "not recorded"."""

    task: str = ''
    seed: int | None = None
    region: str = ''
    variant: str = ''
    source: str = ''
    operator: str = ''

    @classmethod
    def from_dict(cls, metadata: dict[str, Any] | None, where: str = 'episode') -> EpisodeMeta:
        """The typed fields of a ``metadata`` block (other keys ignored); bad types raise
        ``EpisodeError`` naming ``where``."""
        data = metadata or {}
        seed = data.get('seed')
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise EpisodeError(f'{where}: metadata.seed must be an integer, got {seed!r}')
        text = {f.name: data.get(f.name) for f in fields(cls) if f.name != 'seed'}
        bad = [k for k, v in text.items() if v is not None and not isinstance(v, str)]
        if bad:
            raise EpisodeError(f'{where}: metadata {bad} must be text, got '
                               f'{[text[k] for k in bad]}')
        return cls(seed=seed, **{k: v or '' for k, v in text.items()})

    @classmethod
    def from_sidecar(cls, sidecar: dict[str, Any] | None, where: str = 'episode') -> EpisodeMeta:
        """The typed fields of an ``episode.yaml`` (its ``metadata`` block)."""
        return cls.from_dict((sidecar or {}).get('metadata'), where)

    @classmethod
    def from_params(cls, params: dict[str, Any], where: str = 'parameters') -> EpisodeMeta:
        """From ROS parameters (``to_params``): ``seed`` -1 is unset."""
        data = {f.name: params.get(f.name) for f in fields(cls)}
        if data['seed'] == UNSET_SEED:
            data['seed'] = None
        return cls.from_dict(data, where)

    def to_params(self) -> dict[str, Any]:
        """As the recorder node's parameters; a ROS parameter has no null, so an unset seed is
        ``UNSET_SEED``."""
        return {**asdict(self), 'seed': UNSET_SEED if self.seed is None else self.seed}

    def to_dict(self) -> dict[str, Any]:
        """The fields for the sidecar's ``metadata`` block (all of them, so readers see which
        were not recorded)."""
        return asdict(self)


META_FIELDS = tuple(f.name for f in fields(EpisodeMeta))   # task, seed, region, ...


def read_meta(episode_dir: Path | str) -> EpisodeMeta:
    """The typed metadata of the episode in ``episode_dir`` (all unset without a sidecar)."""
    return EpisodeMeta.from_sidecar(read_sidecar(Path(episode_dir)),
                                    str(sidecar_path(Path(episode_dir))))
