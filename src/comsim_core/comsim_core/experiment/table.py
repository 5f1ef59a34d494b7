"""The experiment's success table in the paper's layout, and its paired tests.

Input is one ``Trial`` per rollout: which arm, task, cell (``id``, ``ood`` or ``unseen <variant>``),
layout seed and outcome. Every arm is rolled out on the same seeds of a cell, so two arms are
compared pair by pair (exact McNemar on the discordant pairs); a rate alone is k/N with its
Wilson 95 % interval. Pure functions: the driver builds the trials, the report prints the text.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from comsim_core.statistics import mcnemar, wilson_interval

# (better?, than): the paper's claims, and what the oracle E decomposes.
COMPARISONS = (('C', 'A'), ('C', "A'"), ('C', 'B'), ('D', 'A'), ('E', 'B'), ('E', 'C'))
# A failed rollout moved a task object when it moved more than this (m): the arm touched it.
STILL_M = 0.01


@dataclass(frozen=True)
class Trial:
    arm: str          # the arm's letter: A, A', B, C, D, E
    task: str
    cell: str         # id | ood | unseen <variant>
    seed: int
    success: bool
    moved_m: float | None = None   # the most any task object moved under the policy (m)


def cells_of(trials: Iterable[Trial]) -> list[tuple[str, str]]:
    """(task, cell) in first-seen order."""
    return list(dict.fromkeys((t.task, t.cell) for t in trials))


def counts(trials: Iterable[Trial]) -> dict[tuple[str, str, str], tuple[int, int]]:
    """(arm, task, cell) -> (successes, rollouts)."""
    out: dict[tuple[str, str, str], list[int]] = {}
    for t in trials:
        k = out.setdefault((t.arm, t.task, t.cell), [0, 0])
        k[0] += int(t.success)
        k[1] += 1
    return {key: (k, n) for key, (k, n) in out.items()}


def rate_text(k: int, n: int) -> str:
    lo, hi = wilson_interval(k, n)
    return f'{k}/{n} ({100 * lo:.0f}–{100 * hi:.0f} %)'


def success_table(trials: Sequence[Trial], labels: Mapping[str, str]) -> str:
    """Rows: arms (``labels``: letter -> label, in table order); columns: task x cell."""
    cells, n = cells_of(trials), counts(trials)
    head = '| arm | ' + ' | '.join(f'{task} {cell}' for task, cell in cells) + ' |'
    lines = [head, '|---|' + '---|' * len(cells)]
    for arm, label in labels.items():
        row = [rate_text(*n[(arm, *c)]) if (arm, *c) in n else '—' for c in cells]
        lines.append(f'| {label} | ' + ' | '.join(row) + ' |')
    return '\n'.join(lines)


def paired_tests(trials: Sequence[Trial],
                 pairs: Sequence[tuple[str, str]] = COMPARISONS) -> list[dict]:
    """Each pair of arms that both ran a cell, matched by seed: successes, discordant pairs,
    the difference in rate and the two-sided exact McNemar p-value."""
    by: dict[tuple[str, str, str], dict[int, bool]] = {}
    for t in trials:
        by.setdefault((t.arm, t.task, t.cell), {})[t.seed] = t.success
    out = []
    for a, b in pairs:
        for task, cell in cells_of(trials):
            sa, sb = by.get((a, task, cell)), by.get((b, task, cell))
            if not sa or not sb:
                continue
            seeds = sorted(set(sa) & set(sb))
            if not seeds:
                continue
            ka, kb = sum(sa[s] for s in seeds), sum(sb[s] for s in seeds)
            only_a = sum(sa[s] and not sb[s] for s in seeds)
            only_b = sum(sb[s] and not sa[s] for s in seeds)
            out.append({'a': a, 'b': b, 'task': task, 'cell': cell, 'pairs': len(seeds),
                        'successes_a': ka, 'successes_b': kb, 'only_a': only_a,
                        'only_b': only_b, 'difference': (ka - kb) / len(seeds),
                        'p_mcnemar': mcnemar(only_a, only_b)})
    return out


def verdict(test: dict, alpha: float = 0.05) -> str:
    """What a paired test shows, in words a table can hold."""
    if test['p_mcnemar'] < alpha:
        return f"{test['a']} > {test['b']}" if test['difference'] > 0 else \
            f"{test['a']} < {test['b']}"
    return 'no significant difference'


def paired_table(tests: Sequence[dict]) -> str:
    lines = ['| comparison | task | cell | pairs | successes | only first | only second | '
             'difference | p (exact McNemar) | at p < 0.05 |',
             '|---|---|---|---|---|---|---|---|---|---|']
    for t in tests:
        lines.append(f"| {t['a']} vs {t['b']} | {t['task']} | {t['cell']} | {t['pairs']} | "
                     f"{t['successes_a']} vs {t['successes_b']} | {t['only_a']} | "
                     f"{t['only_b']} | {100 * t['difference']:+.0f} pts | "
                     f"{t['p_mcnemar']:.3g} | {verdict(t)} |")
    return '\n'.join(lines)


def failure_table(trials: Sequence[Trial], labels: Mapping[str, str],
                  still_m: float = STILL_M) -> str:
    """Per arm and cell, the failures split by whether the policy moved a task object more
    than ``still_m``: `untouched / touched` (a miss, or a push or grasp that went astray)."""
    cells, ran = cells_of(trials), counts(trials)
    split: dict[tuple[str, str, str], list[int]] = {}
    for t in trials:
        if not t.success and t.moved_m is not None:
            split.setdefault((t.arm, t.task, t.cell), [0, 0])[int(t.moved_m > still_m)] += 1
    head = '| arm | ' + ' | '.join(f'{task} {cell}' for task, cell in cells) + ' |'
    lines = [head, '|---|' + '---|' * len(cells)]
    for arm, label in labels.items():
        row = ['{} / {}'.format(*split.get((arm, *c), (0, 0))) if (arm, *c) in ran else '—'
               for c in cells]
        lines.append(f'| {label} | ' + ' | '.join(row) + ' |')
    return '\n'.join(lines)


def above_zero(trials: Sequence[Trial], arm: str = 'D') -> list[dict]:
    """Whether ``arm`` succeeds at all, per cell: k/N and whether its Wilson interval excludes
    0 (any success does: the question D > 0 asks is whether the policy ever succeeds)."""
    out = []
    for (a, task, cell), (k, n) in counts(trials).items():
        if a == arm:
            lo, hi = wilson_interval(k, n)
            out.append({'arm': arm, 'task': task, 'cell': cell, 'successes': k, 'rollouts': n,
                        'wilson_95': [float(lo), float(hi)],
                        'above_zero': bool(lo > 0)})
    return out
