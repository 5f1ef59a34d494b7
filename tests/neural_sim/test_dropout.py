"""Condition dropout yields all four conditionings, and a dropped condition is really nulled."""

import torch
from ns_helpers import one_thread, randomise, tiny_config  # noqa: F401

from comsim_neural_sim.checkpoint import transformer_from_config
from comsim_neural_sim.training.dropout import sample_condition_masks


def test_four_conditionings_appear_with_independent_probabilities():
    g = torch.Generator().manual_seed(0)
    n, pa, pv = 20000, 0.2, 0.35
    m = sample_condition_masks(n, 8, 2, pa, pv, 0.5, g)
    a, v = m.action_keep.bool(), m.sim_keep.bool()
    freq = {'joint': (a & v).float().mean(), 'action': (a & ~v).float().mean(),
            'sim': (~a & v).float().mean(), 'uncond': (~a & ~v).float().mean()}
    want = {'joint': (1 - pa) * (1 - pv), 'action': (1 - pa) * pv, 'sim': pa * (1 - pv),
            'uncond': pa * pv}
    for k in want:   # 4 sigma of a binomial proportion at n = 20000 is < 0.015
        assert abs(float(freq[k]) - want[k]) < 0.015, (k, float(freq[k]), want[k])
    assert m.context[:, 2:].sum() == 0                       # only the first 2 frames
    assert abs(float(m.context[:, 0].mean()) - 0.5) < 0.02


def test_dropped_condition_is_nulled_inside_the_model():
    cfg = tiny_config()
    model = randomise(transformer_from_config(cfg), seed=4).eval()
    g = torch.Generator().manual_seed(0)
    masks = sample_condition_masks(16, cfg.frames, 1, 0.5, 0.5, 0.0, g)
    shape = (16, cfg.frames, 3, cfg.height, cfg.width)
    x, sim, sim2 = (torch.randn(shape, generator=g) for _ in range(3))
    act, act2 = torch.randn(16, 4, 7, generator=g), torch.randn(16, 4, 7, generator=g)
    t = torch.full((16,), 500.0)
    with torch.no_grad():
        base = model(x, t, sim, act, masks.sim_keep, masks.action_keep).sample
        new_sim = model(x, t, sim2, act, masks.sim_keep, masks.action_keep).sample
        new_act = model(x, t, sim, act2, masks.sim_keep, masks.action_keep).sample
    d_sim = (base - new_sim).flatten(1).abs().amax(1)
    d_act = (base - new_act).flatten(1).abs().amax(1)
    sk, ak = masks.sim_keep.bool(), masks.action_keep.bool()
    assert sk.any() and (~sk).any() and ak.any() and (~ak).any()
    assert torch.all(d_sim[~sk] < 1e-6) and torch.all(d_sim[sk] > 1e-4)
    assert torch.all(d_act[~ak] < 1e-6) and torch.all(d_act[ak] > 1e-4)
