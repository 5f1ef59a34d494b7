"""Statistics of success rates, shared by recording, evaluation and the experiment."""
from __future__ import annotations

from math import comb

import numpy as np


def wilson_interval(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95 % Wilson score interval of a success rate k/n (sound at 0/n and n/n, unlike k/n ± se)."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def mcnemar(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value for paired successes: `only_a` pairs where only arm A
    succeeded, `only_b` where only B did (concordant pairs carry no information). Under the null
    each discordant pair is a fair coin, so p = P(|X - n/2| >= |only_a - n/2|), X ~ Bin(n, 1/2)."""
    if only_a < 0 or only_b < 0:
        raise ValueError(f'discordant counts must be >= 0, got {only_a}, {only_b}')
    n = only_a + only_b
    if n == 0:
        return 1.0
    tail = sum(comb(n, i) for i in range(min(only_a, only_b) + 1)) / 2 ** n
    return min(1.0, 2 * tail)
