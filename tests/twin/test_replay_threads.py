"""The replay's threads: run-ahead source (order, errors, early stop), camera turns, writer."""
from __future__ import annotations

import threading
import time

import pytest

from comsim_twin.replay.threads import BackgroundCalls, Turns, TurnsClosed, run_ahead


def test_run_ahead_keeps_order_and_runs_ahead_in_its_own_thread() -> None:
    threads = set()

    def source():
        for i in range(6):
            threads.add(threading.current_thread().name)
            yield i

    assert list(run_ahead(source(), name='ahead')) == list(range(6))
    assert threads == {'ahead'}


def test_run_ahead_hands_a_wanted_item_over_at_once() -> None:
    """Items cross in batches, but one the caller waits for must not wait for a full batch."""
    seen = threading.Event()

    def source():
        yield 'joints'
        yield 'image'            # wanted
        assert seen.wait(2.0)    # times out if 'image' sat in a half-full batch
        yield 'command'

    out = []
    for item in run_ahead(source(), wanted=lambda x: x == 'image', batch=64):
        out.append(item)
        if item == 'image':
            seen.set()
    assert out == ['joints', 'image', 'command']


def test_stopping_wakes_a_source_blocked_on_a_turn_the_caller_holds() -> None:
    """An error (Ctrl-C) while the caller is inside run_ahead must not leave it joining a
    source that waits for a turn only the caller would give back."""
    turns = Turns()

    def source():
        turns.take('front')
        yield 1
        turns.take('front')   # blocks: the caller never gives 'front' back
        yield 2

    it = run_ahead(source(), wanted=lambda x: True, on_stop=turns.close)
    assert next(it) == 1
    time.sleep(0.05)
    closer = threading.Thread(target=it.close, daemon=True)
    closer.start()
    closer.join(2.0)
    assert not closer.is_alive()


def test_a_turn_waits_until_given_back_and_other_keys_do_not_wait() -> None:
    turns = Turns()
    turns.take('front')
    turns.take('side')                 # another key: no wait
    taken = threading.Event()

    def second_front():
        turns.take('front')
        taken.set()
    helper = threading.Thread(target=second_front)
    helper.start()
    assert not taken.wait(0.1)         # the first turn of 'front' is still out
    turns.give_back('front')
    assert taken.wait(2.0)
    helper.join()


def test_closing_turns_wakes_a_waiting_take() -> None:
    turns = Turns()
    turns.take('front')
    errors = []

    def waiter():
        try:
            turns.take('front')
        except TurnsClosed as exc:
            errors.append(exc)
    helper = threading.Thread(target=waiter)
    helper.start()
    time.sleep(0.05)
    turns.close()
    helper.join(2.0)
    assert not helper.is_alive() and len(errors) == 1


def test_run_ahead_raises_the_source_error_in_the_caller() -> None:
    def source():
        yield 1
        raise RuntimeError('bag corrupt at message 2')

    got = []
    with pytest.raises(RuntimeError, match='corrupt at message 2'):
        for item in run_ahead(source()):
            got.append(item)
    assert got == [1]


def test_closing_early_stops_the_source_thread() -> None:
    def source():
        i = 0
        while True:   # endless: only close() can end it
            yield i
            i += 1

    before = threading.active_count()
    it = run_ahead(source(), depth=2)
    assert next(it) == 0
    time.sleep(0.05)   # the source fills the queue and blocks on it
    it.close()
    time.sleep(0.1)
    assert threading.active_count() == before


def test_background_calls_run_in_order_and_report_the_first_error() -> None:
    out = []
    calls = BackgroundCalls(depth=4)
    for i in range(10):
        calls(out.append, i)
    calls.close()
    assert out == list(range(10))

    def boom(x):
        raise OSError(28, 'No space left on device')
    calls = BackgroundCalls()
    calls(boom, 1)
    with pytest.raises(OSError, match='No space left'):
        calls.close()
