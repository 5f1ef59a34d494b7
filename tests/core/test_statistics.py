"""Success-rate statistics against values worked out by hand."""
from __future__ import annotations

import pytest

from comsim_core.statistics import mcnemar, wilson_interval


def test_wilson_interval_matches_hand_computed_bounds():
    # 0/3: centre = (0 + 1.96^2/6) / (1 + 1.96^2/3) = 0.6403/2.2805 = 0.2808, half the same
    assert wilson_interval(0, 3) == pytest.approx((0.0, 0.5615), abs=1e-4)
    # 8/10: centre 0.7167, half 0.2069 (z = 1.96)
    assert wilson_interval(8, 10) == pytest.approx((0.4902, 0.9433), abs=1e-4)
    assert wilson_interval(20, 20)[1] == 1.0 and wilson_interval(0, 0) == (0.0, 1.0)


def test_mcnemar_is_the_two_sided_exact_binomial_on_discordant_pairs():
    # 0 vs 5 discordant: 2 * (1/2)^5 = 0.0625
    assert mcnemar(0, 5) == pytest.approx(0.0625)
    assert mcnemar(5, 0) == pytest.approx(0.0625)
    # 1 vs 9: 2 * (1 + 10) / 1024 = 0.021484375
    assert mcnemar(1, 9) == pytest.approx(22 / 1024)
    # 2 vs 6: 2 * (1 + 8 + 28) / 256 = 0.2890625
    assert mcnemar(6, 2) == pytest.approx(74 / 256)
    # balanced or no discordant pairs: no evidence of a difference
    assert mcnemar(3, 3) == 1.0 and mcnemar(0, 0) == 1.0
    with pytest.raises(ValueError):
        mcnemar(-1, 2)
