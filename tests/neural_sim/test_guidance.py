"""Compositional guidance: the formula, its special cases, and batched == separate forwards."""

import pytest
import torch
from ns_helpers import one_thread, randomise, tiny_config  # noqa: F401

from comsim_neural_sim.checkpoint import transformer_from_config
from comsim_neural_sim.sampling.guidance import (
    GuidanceWeights,
    compose_joint,
    compose_scores,
    guided_prediction,
)


@pytest.fixture(scope='module')
def setup():
    cfg = tiny_config()
    m = randomise(transformer_from_config(cfg), seed=2).eval()
    g = torch.Generator().manual_seed(1)
    shape = (3, cfg.frames, 3, cfg.height, cfg.width)
    x, sim = torch.randn(shape, generator=g), torch.randn(shape, generator=g)
    act = torch.randn(3, cfg.frames, 7, generator=g)
    t = torch.tensor([900.0, 300.0, 20.0])
    ctx, mask = torch.randn(shape, generator=g), torch.zeros(3, cfg.frames)
    mask[:, :1] = 1
    ones, zeros = torch.ones(3), torch.zeros(3)
    with torch.no_grad():
        eps = {name: m(x, t, sim, act, sim_keep=s, action_keep=a, context=ctx,
                       context_mask=mask).sample
               for name, (s, a) in {'uncond': (zeros, zeros), 'action': (zeros, ones),
                                    'sim': (ones, zeros), 'joint': (ones, ones)}.items()}
    return m, (x, t, sim, act, ctx, mask), eps


def _guided(m, inputs, w, mode):
    x, t, sim, act, ctx, mask = inputs
    with torch.no_grad():
        return guided_prediction(m, x, t, sim, act, w, mode, ctx, mask)


def test_the_four_conditionings_differ(setup):
    _, _, eps = setup
    names = list(eps)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            assert (eps[a] - eps[b]).abs().mean() > 1e-4, (a, b)


def test_batched_composed_equals_three_separate_forwards(setup):
    m, inputs, eps = setup
    w = GuidanceWeights(w_action=2.5, w_sim=1.5)
    got = _guided(m, inputs, w, 'composed')
    want = compose_scores(eps['uncond'], eps['action'], eps['sim'], 2.5, 1.5)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)
    assert (got - eps['joint']).abs().mean() > 1e-4   # not secretly the joint score


@pytest.mark.parametrize('w_a,w_v,expect', [(1, 0, 'action'), (0, 1, 'sim'), (0, 0, 'uncond')])
def test_zero_weights_reduce_to_plain_conditionals(setup, w_a, w_v, expect):
    m, inputs, eps = setup
    got = _guided(m, inputs, GuidanceWeights(w_a, w_v), 'composed')
    torch.testing.assert_close(got, eps[expect], atol=1e-5, rtol=1e-4)


def test_joint_and_single_modes(setup):
    m, inputs, eps = setup
    torch.testing.assert_close(_guided(m, inputs, GuidanceWeights(w_joint=1.0), 'joint'),
                               eps['joint'], atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(_guided(m, inputs, GuidanceWeights(w_joint=3.0), 'joint'),
                               compose_joint(eps['uncond'], eps['joint'], 3.0),
                               atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(_guided(m, inputs, GuidanceWeights(w_action=2.0), 'action'),
                               compose_joint(eps['uncond'], eps['action'], 2.0),
                               atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(_guided(m, inputs, GuidanceWeights(), 'uncond'), eps['uncond'],
                               atol=1e-5, rtol=1e-4)


def test_coefficients_sum_to_one():
    for mode in ('composed', 'joint', 'action', 'sim', 'uncond'):
        c = GuidanceWeights(1.7, 0.4, 2.2).coefficients(mode)
        assert sum(c.values()) == pytest.approx(1.0)
