"""Training arms: which episodes of which sources one checkpoint learns from.

An experiment compares checkpoints that differ only in their data: one recipe, the same steps,
one normaliser (fitted on the union of every arm's motion, so that no arm's range forbids the
joint values another arm's data needs) and the same evaluation seeds. An ``Arm`` names its data
as episode counts per source; ``arm_specs`` turns them into episode lists, the first N
successful episodes of each source sorted by name, so "10 real" is the same ten demonstrations
in every arm that has them and "20 real" adds the next ten.
"""
from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from comsim_core.episodes import find_episodes

from .data.episode_arrays import SOURCES, EpisodeDataError, episode_success
from .training.data_setup import DataSpec, of_tasks


@dataclass(frozen=True)
class Arm:
    """``counts``: source -> episodes (None = every successful one). ``weights``: the share of
    training samples per source (empty = in proportion to their windows)."""

    name: str                       # folder-safe key: real10, real10_pseudo200, ...
    label: str                      # what a table shows: "A: 10 real"
    counts: Mapping[str, int | None]
    weights: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        bad = [s for s in self.counts if s not in SOURCES]
        if bad:
            raise ValueError(f'arm {self.name}: unknown sources {bad}; expected {SOURCES}')


def paper_arms(n_real: int = 10, n_generated: int = 200, generated_share: float = 0.5
               ) -> tuple[Arm, ...]:
    """The paper's arms A, A', B, C, D and the oracle E (the lab filming the generated
    trajectories, which the paper could not have).

    Co-trained arms draw ``generated_share`` of their samples from the generated episodes and
    the rest from the real ones (the paper gives no ratio: half keeps the few real
    demonstrations from being drowned by 20x as many generated ones).
    """
    mix = {'real': 1.0 - generated_share}
    g = n_generated
    return (
        Arm(f'real{n_real}', f'A: {n_real} real', {'real': n_real}),
        Arm(f'real{2 * n_real}', f"A': {2 * n_real} real", {'real': 2 * n_real}),
        Arm(f'real{n_real}_sim{g}', f'B: {n_real} real + {g} sim',
            {'real': n_real, 'sim': g}, {**mix, 'sim': generated_share}),
        Arm(f'real{n_real}_pseudo{g}', f'C: {n_real} real + {g} pseudo-real',
            {'real': n_real, 'pseudo_real': g}, {**mix, 'pseudo_real': generated_share}),
        Arm(f'pseudo{g}', f'D: {g} pseudo-real', {'pseudo_real': g}),
        Arm(f'real{n_real}_gt{g}', f'E: {n_real} real + {g} ground truth (oracle)',
            {'real': n_real, 'gt': g}, {**mix, 'gt': generated_share}),
    )


def normaliser_data(arms: Sequence[Arm], folders: Mapping[str, Path]) -> list[str]:
    """What an experiment's normaliser is fitted on (``folder:source`` for every source these
    arms use): the same for every arm it trains, also for an arm trained later or alone."""
    used = sorted({s for arm in arms for s in arm.counts})
    return [f'{folders[s]}:{s}' for s in used if s in folders]


def select_arms(arms: Sequence[Arm], letters: Sequence[str] | None) -> list[Arm]:
    """The arms whose label starts with one of ``letters`` (A, A', B...); None = all."""
    if not letters:
        return list(arms)
    keys = {a.label.split(':')[0]: a for a in arms}
    unknown = [x for x in letters if x not in keys]
    if unknown:
        raise ValueError(f'unknown arms {unknown}; expected some of {list(keys)}')
    return [keys[x] for x in letters]


def successful_episodes(directory: Path, tasks: Sequence[str] = ()) -> list[Path]:
    """The successful episodes under ``directory`` (of ``tasks`` when given), sorted by name."""
    paths = of_tasks(sorted(find_episodes(directory), key=lambda p: p.name), tasks)
    return [p for p in paths if episode_success(p) is True]


def arm_specs(arm: Arm, sources: Mapping[str, Path], tasks: Sequence[str] = (),
              allowed: Mapping[str, Collection[str]] | None = None) -> list[DataSpec]:
    """One ``DataSpec`` per episode the arm trains on (its source forced); ``allowed``, per
    source, the only episode names it may take (other sources: any)."""
    specs: list[DataSpec] = []
    for source, n in arm.counts.items():
        if source not in sources:
            raise EpisodeDataError(f'arm {arm.name} needs {source} episodes; none were given')
        found = successful_episodes(Path(sources[source]), tasks)
        if allowed and source in allowed:
            found = [p for p in found if p.name in allowed[source]]
        if n is not None and len(found) < n:
            raise EpisodeDataError(f'arm {arm.name} needs {n} successful {source} episodes '
                                   f'under {sources[source]}, found {len(found)}')
        specs += [DataSpec(p, source) for p in (found if n is None else found[:n])]
    return specs
