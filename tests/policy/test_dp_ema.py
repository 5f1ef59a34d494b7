"""The policy's weight average (diffusers' EMAModel): the warm-up the config asks for."""
import pytest
import torch

from comsim_policy.training.train import policy_ema


def test_decay_ramps_over_the_warm_up_then_stays_at_the_configured_decay():
    ema = policy_ema(torch.nn.Linear(2, 2), decay=0.995, warmup_steps=50)
    assert ema.get_decay(1) == 0.0  # the first update copies the weights
    assert ema.get_decay(51) == pytest.approx(50 / 100)  # half-way: step / (warm-up + step)
    assert ema.get_decay(100_000) == 0.995


def test_without_warm_up_the_decay_is_constant():
    ema = policy_ema(torch.nn.Linear(2, 2), decay=0.9, warmup_steps=0)
    assert [ema.get_decay(s) for s in (2, 10, 1000)] == [0.9, 0.9, 0.9]


def test_the_average_lags_the_weights():
    model = torch.nn.Linear(1, 1, bias=False)
    averaged = torch.nn.Linear(1, 1, bias=False)
    ema = policy_ema(model, decay=0.5, warmup_steps=0)
    for w in (1.0, 1.0, 3.0):
        with torch.no_grad():
            model.weight.fill_(w)
        ema.step(model.parameters())
    ema.copy_to(averaged.parameters())
    # first update copies (1), then 0.5 * 1 + 0.5 * 1 = 1, then 0.5 * 1 + 0.5 * 3 = 2
    assert averaged.weight.item() == pytest.approx(2.0)
