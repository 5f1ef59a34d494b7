"""The replay's run-ahead source: order kept, gates hold the source, errors and early stops."""
from __future__ import annotations

import threading
import time

import pytest

from comsim_twin.replay.threads import BackgroundCalls, run_ahead


def test_run_ahead_keeps_order_and_a_gate_holds_the_source_until_released() -> None:
    state = {'produced': 0}

    def source():
        for i in range(6):
            state['produced'] = i
            yield i, i % 3 == 0   # items 0 and 3 are gated

    seen = []
    for item, release in run_ahead(source()):
        if item in (0, 3):
            time.sleep(0.05)   # the source must not move on while we hold the gate
            assert state['produced'] == item
        release()
        seen.append(item)
    assert seen == list(range(6))


def test_run_ahead_raises_the_source_error_in_the_caller() -> None:
    def source():
        yield 1, False
        raise RuntimeError('bag corrupt at message 2')

    got = []
    with pytest.raises(RuntimeError, match='corrupt at message 2'):
        for item, release in run_ahead(source()):
            release()
            got.append(item)
    assert got == [1]


def test_closing_early_stops_the_source_thread() -> None:
    def source():
        i = 0
        while True:   # endless, and gated: only close() can end it
            yield i, True
            i += 1

    before = threading.active_count()
    it = run_ahead(source(), depth=2)
    item, release = next(it)
    assert item == 0
    it.close()   # while the source waits at a gate it was never given
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
