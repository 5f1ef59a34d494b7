"""Rollout records and the success table both evaluation modes (in-process, DDS) produce.

A cell is checkpoint x task x region x variant (the split: `id` / `ood` layouts, or an unseen
object variant); each gets k/N, its Wilson 95 % interval and the seconds per rollout. Rollout k
of every cell uses layout seed `seed + k` for every checkpoint, so two checkpoints are compared
pair by pair with an exact McNemar test.
"""
from __future__ import annotations

import itertools
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from comsim_core.statistics import mcnemar, wilson_interval


@dataclass
class Rollout:
    checkpoint: str
    task: str
    region: str
    variant: str
    seed: int
    success: bool
    message: str
    sim_s: float
    wall_s: float
    bag: str = ''
    sheet: str = ''
    timeout_s: float = 0.0   # sim seconds allowed
    renders: int = 0         # camera frames rendered (in-process: only those the policy saw)
    chunks: int = 0          # action chunks accepted
    cpu_s: float = 0.0       # in-process: CPU seconds of the worker (all its threads)
    # in-process: how far each task object moved on the table (m, xy) from the moment the
    # policy took over: tells a push that missed (0) from one that went astray
    moved_m: dict[str, float] = field(default_factory=dict)

    @property
    def cell(self) -> tuple[str, str, str]:
        return self.task, self.region, self.variant or 'default'


@dataclass
class Evaluation:
    rollouts: list[Rollout] = field(default_factory=list)

    def table(self) -> list[dict]:
        """One row per checkpoint x task x region x variant: k/N, Wilson interval, s/rollout."""
        rows: dict[tuple, dict] = {}
        for r in self.rollouts:
            task, region, variant = r.cell
            row = rows.setdefault((r.checkpoint, *r.cell), {
                'checkpoint': r.checkpoint, 'task': task, 'region': region, 'variant': variant,
                'successes': 0, 'rollouts': 0, 'wall_s': 0.0})
            row['rollouts'] += 1
            row['successes'] += int(r.success)
            row['wall_s'] += r.wall_s
        for row in rows.values():
            row['success_rate'] = row['successes'] / row['rollouts']
            row['wilson_95'] = list(wilson_interval(row['successes'], row['rollouts']))
            row['s_per_rollout'] = round(row.pop('wall_s') / row['rollouts'], 2)
        return list(rows.values())

    def paired(self) -> list[dict]:
        """Every two checkpoints on every cell both ran, matched by seed: the discordant pairs
        and the exact McNemar p-value (two-sided)."""
        by: dict[tuple, dict[int, bool]] = {}
        for r in self.rollouts:
            by.setdefault((r.checkpoint, *r.cell), {})[r.seed] = r.success
        names = list(dict.fromkeys(r.checkpoint for r in self.rollouts))
        cells = list(dict.fromkeys(r.cell for r in self.rollouts))
        out = []
        for a, b in itertools.combinations(names, 2):
            for cell in cells:
                sa, sb = by.get((a, *cell)), by.get((b, *cell))
                if not sa or not sb:
                    continue
                seeds = sorted(set(sa) & set(sb))
                only_a = sum(sa[s] and not sb[s] for s in seeds)
                only_b = sum(sb[s] and not sa[s] for s in seeds)
                out.append({'a': a, 'b': b, 'task': cell[0], 'region': cell[1],
                            'variant': cell[2], 'pairs': len(seeds),
                            'successes_a': sum(sa[s] for s in seeds),
                            'successes_b': sum(sb[s] for s in seeds),
                            'only_a': only_a, 'only_b': only_b,
                            'p_mcnemar': mcnemar(only_a, only_b)})
        return out

    def markdown(self) -> str:
        lines = ['| checkpoint | task | region | variant | success | rate | '
                 '95 % interval (Wilson) | s/rollout |', '|---|---|---|---|---|---|---|---|']
        for row in self.table():
            lo, hi = row['wilson_95']
            lines.append(f"| {row['checkpoint']} | {row['task']} | {row['region']} | "
                         f"{row['variant']} | {row['successes']}/{row['rollouts']} | "
                         f"{100 * row['success_rate']:.0f} % | {100 * lo:.0f}–{100 * hi:.0f} % | "
                         f"{row['s_per_rollout']:.1f} |")
        paired = self.paired()
        if paired:
            lines += ['', '| A | B | task | region | variant | pairs | A | B | only A | only B | '
                      'p (exact McNemar) |', '|---|---|---|---|---|---|---|---|---|---|---|']
            lines += [f"| {p['a']} | {p['b']} | {p['task']} | {p['region']} | {p['variant']} | "
                      f"{p['pairs']} | {p['successes_a']} | {p['successes_b']} | {p['only_a']} | "
                      f"{p['only_b']} | {p['p_mcnemar']:.3g} |" for p in paired]
        return '\n'.join(lines)

    def save(self, path: Path) -> Path:
        path.write_text(json.dumps({'table': self.table(), 'paired': self.paired(),
                                    'rollouts': [asdict(r) for r in self.rollouts]}, indent=1))
        return path


def checkpoint_names(dirs: list[Path]) -> dict[Path, str]:
    """Short unique labels: the directory name, with its parent where names collide."""
    names = {d: d.name for d in dirs}
    if len(set(names.values())) < len(dirs):
        names = {d: f'{d.parent.name}_{d.name}' for d in dirs}
    return names
