"""The two threads a replay uses besides the caller's: bag reading + physics run ahead of the
renders, and the paired bag is written behind them. Errors cross back to the caller's thread;
nothing is dropped silently."""
from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

T = TypeVar('T')
_DONE = object()


class BackgroundCalls:
    """Runs a writer's calls in one thread, in order, so bag I/O overlaps the next render.

    The first error is re-raised on the next call or at `close()`.
    """

    def __init__(self, depth: int = 32):
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name='paired-writer', daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            if self._error is None:
                fn, args = item
                try:
                    fn(*args)
                except BaseException as exc:  # handed to the caller's thread
                    self._error = exc

    def __call__(self, fn, *args) -> None:
        if self._error is not None:
            raise self._error
        self._queue.put((fn, args))

    def close(self) -> None:
        """Wait for every queued call; raise the first error."""
        self.stop()
        if self._error is not None:
            raise self._error

    def stop(self) -> None:
        """Finish the queued calls and end the thread (never raises)."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()


def run_ahead(source: Iterator[tuple[T, bool]], depth: int = 64,
              name: str = 'replay-source') -> Iterator[tuple[T, Callable[[], None]]]:
    """Iterate ``source`` in a helper thread, up to ``depth`` items ahead of the caller.

    ``source`` yields ``(item, gated)``. After a gated item the source pauses until the caller
    calls the ``release`` handed out with it (a no-op for other items): the caller reads
    shared state in between (a replay snapshots the scene for a render), then the source moves
    on while the caller does the slow part. Closing the iterator stops the thread.
    """
    items: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(entry: Any) -> bool:
        while not stop.is_set():
            try:
                items.put(entry, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item, gated in source:
                gate = threading.Event() if gated else None
                if not put((item, gate)):
                    return
                while gate is not None and not gate.wait(0.05):
                    if stop.is_set():
                        return
            put((_DONE, None))
        except BaseException as exc:  # raised again in the caller's thread
            put((_DONE, exc))

    thread = threading.Thread(target=produce, name=name, daemon=True)
    thread.start()
    try:
        while True:
            item, gate = items.get()
            if item is _DONE:
                if gate is not None:
                    raise gate
                return
            yield item, (gate.set if gate is not None else _no_op)
    finally:
        stop.set()
        thread.join()


def _no_op() -> None:
    return None
