"""`coverage: area`: generated layouts cover the region's area evenly, where the task's own
layout rule thins them along the edges (move_card: a push that must stay inside the region)."""
import numpy as np
import pytest

from comsim_twin.generation.config import GenerationConfig, GenerationConfigError
from comsim_twin.generation.randomise import in_region, randomise, region_cells
from fixtures.twin_scenes import base_scene

N = 500


def _starts(coverage: str) -> tuple[np.ndarray, dict]:
    cfg = GenerationConfig.load().with_overrides(region='workspace', coverage=coverage)
    base = base_scene('move_card')
    starts = np.array([randomise(base, 'move_card', cfg, seed).params['objects']['card']['pos'][:2]
                       for seed in range(N)])
    return starts, cfg.task('move_card')['regions']['workspace']


def _per_area(starts: np.ndarray, bounds: dict, band: tuple[float, float]) -> float:
    """Layouts per unit of region area whose start y lies in ``band``."""
    corners, inside = region_cells(bounds, 0.01)
    area = sum(f for (x, y), f in zip(corners, inside, strict=True) if band[0] <= y < band[1])
    n = np.count_nonzero((starts[:, 1] >= band[0]) & (starts[:, 1] < band[1]))
    return n / area


@pytest.fixture(scope='module')
def by_rule():
    return _starts('layout')


@pytest.fixture(scope='module')
def by_area():
    return _starts('area')


def test_the_task_rule_alone_thins_the_far_edge(by_rule):
    starts, ws = by_rule
    edge, middle = _per_area(starts, ws, (0.25, 0.40)), _per_area(starts, ws, (-0.10, 0.15))
    assert edge < 0.6 * middle, (edge, middle)


def test_area_coverage_spreads_the_starts_evenly(by_area):
    starts, ws = by_area
    assert all(in_region(xy, ws) for xy in starts)
    middle = _per_area(starts, ws, (-0.10, 0.15))
    for band in ((0.25, 0.40), (-0.34, -0.20)):
        assert 0.7 * middle < _per_area(starts, ws, band) < 1.4 * middle, band


def test_area_coverage_is_deterministic_for_a_seed():
    cfg = GenerationConfig.load().with_overrides(region='workspace', coverage='area')
    base = base_scene('move_card')
    a, b = (randomise(base, 'move_card', cfg, 7).params for _ in range(2))
    assert a['objects'] == b['objects'] and a['target'] == b['target'] and a['coverage'] == 'area'


def test_a_bad_coverage_setting_is_one_clear_error():
    with pytest.raises(GenerationConfigError, match='coverage_cell_m'):
        GenerationConfig.load().with_overrides(coverage_cell_m=0)
    with pytest.raises(GenerationConfigError, match='coverage'):
        GenerationConfig.from_dict({**GenerationConfig.load().to_dict(), 'coverage': 'grid'})
