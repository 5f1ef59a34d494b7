"""Training to a wall-clock budget (`StepBudget`, `--time-budget-s`)."""
from __future__ import annotations

import json
import time

import torch

from comsim_policy.training.budget import StepBudget
from comsim_policy.training.train import main
from fixtures.policy_episodes import tiny_config, write_episode


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_step_count_is_fitted_to_the_measured_rate_every_interval():
    clock = Clock()
    budget = StepBudget(deadline=1000.0, every=100, settle_steps=50, margin=1.0, clock=clock)
    plans = {}
    for step in range(1, 400):
        clock.now = step * 0.5 if step <= 200 else 100 + (step - 200) * 1.0  # 2/s, then 1/s
        plans[step] = budget.plan(step)
    planned = {s: p for s, p in plans.items() if p is not None}
    assert sorted(planned) == [150, 250, 350]          # settled at 50, then every 100 steps
    assert planned[150] == 150 + 2 * (1000 - 75)        # 100 steps in 50 s, 925 s left
    assert planned[350] == 350 + int(300 / 225 * 750)   # steps 50 -> 350 in 225 s, 750 s left


def test_a_deadline_already_past_still_plans_one_last_step():
    clock = Clock()
    budget = StepBudget(deadline=10.0, every=10, settle_steps=5, clock=clock)
    plans = []
    for step in range(1, 30):
        clock.now = float(step)
        plans.append((step, budget.plan(step)))
    assert [(s, p) for s, p in plans if p is not None and s >= 10] == [(15, 16), (25, 26)]


def test_training_with_a_time_budget_ends_by_it(tmp_path):
    """max_steps far beyond what the budget allows: the run fits its count and stops."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        write_episode(tmp_path / 'eps', 0, n_frames=30)
        cfg = tiny_config(max_steps=1_000_000, log_every=20, checkpoint_every=10_000,
                          cache_dir=str(tmp_path / 'cache'))
        cfg.train.val_every = 40
        cfg.to_yaml(tmp_path / 'tiny.yaml')
        t0 = time.monotonic()
        main(['--config', str(tmp_path / 'tiny.yaml'), '--data', f'{tmp_path / "eps"}:real',
              '--out', str(tmp_path / 'ckpt'), '--time-budget-s', '12'])
        wall = time.monotonic() - t0
    finally:
        torch.set_num_threads(threads)
    steps = [json.loads(x)['step'] for x in (tmp_path / 'ckpt' / 'log.jsonl').read_text()
             .splitlines()]
    assert 50 < steps[-1] < 1_000_000
    assert wall < 12 + 30          # loose: a loaded machine slows the last interval
    state = json.loads((tmp_path / 'ckpt' / 'training_state' / 'state.json').read_text())
    assert state['step'] == steps[-1]


def test_a_resumed_runs_history_starts_with_what_it_logged_before(tmp_path):
    """The summary of a resumed run covers the whole run (its arm's validation figures in the
    experiment's report): records up to the resumed step, merged by step, torn lines and
    steps past the checkpoint (run again) dropped."""
    from comsim_policy.training.train import logged_history

    log = tmp_path / 'log.jsonl'
    log.write_text('{"step": 50, "loss": 1.0}\n{"step": 100, "loss": 0.5}\n'
                   '{"step": 100, "val_loss": 0.4}\n{"step": 150, "loss": 0.3}\n{"step": 1')
    assert logged_history(log, 100) == [{'step': 50, 'loss': 1.0},
                                        {'step': 100, 'loss': 0.5, 'val_loss': 0.4}]
    assert logged_history(tmp_path / 'none.jsonl', 100) == []
