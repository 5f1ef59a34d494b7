"""The two threads a replay uses besides the caller's: bag reading, physics and scene snapshots
run ahead of the renders (``run_ahead``, taking per-camera ``Turns``), and the lens warp and the
paired bag's writes run behind them (``BackgroundCalls``). Errors cross back to the caller's
thread; nothing is dropped silently."""
from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

T = TypeVar('T')
_DONE = object()


class BackgroundCalls:
    """Runs a writer's calls in one thread, in order, so bag I/O overlaps the next render.

    Calls cross to the thread ``batch`` at a time (fewer thread hand-offs; the writer is behind
    anyway). The first error is re-raised on the next call or at `close()`.
    """

    def __init__(self, depth: int = 8, batch: int = 8):
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._batch = batch
        self._pending: list = []
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name='paired-writer', daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            calls = self._queue.get()
            if calls is None:
                return
            for fn, args in calls:
                if self._error is not None:
                    break
                try:
                    fn(*args)
                except BaseException as exc:  # handed to the caller's thread
                    self._error = exc

    def __call__(self, fn, *args) -> None:
        if self._error is not None:
            raise self._error
        self._pending.append((fn, args))
        if len(self._pending) >= self._batch:
            self._hand_over()

    def _hand_over(self) -> None:
        if self._pending:
            self._queue.put(self._pending)
            self._pending = []

    def close(self) -> None:
        """Run every call made so far; raise the first error."""
        self._hand_over()
        self.stop()
        if self._error is not None:
            raise self._error

    def stop(self) -> None:
        """Finish the calls handed over and end the thread (never raises)."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()


def run_ahead(source: Iterator[T], depth: int = 16, name: str = 'replay-source',
              wanted: Callable[[T], bool] | None = None, batch: int = 64,
              on_stop: Callable[[], None] | None = None) -> Iterator[T]:
    """Iterate ``source`` in a helper thread, ahead of the caller.

    Items cross to the caller in batches (fewer thread hand-offs): a batch ends at an item
    ``wanted`` says the caller is waiting for (the replay's images), or after ``batch`` items;
    at most ``depth`` batches wait. Closing the iterator (or an error, Ctrl-C included, while
    the caller is in it) stops the thread: ``on_stop`` runs first, to wake a source blocked on
    something only the caller would have released (``Turns.close``). An error in ``source`` is
    raised in the caller after the items before it.
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
        pending: list = []
        try:
            for item in source:
                pending.append(item)
                if len(pending) >= batch or (wanted is not None and wanted(item)):
                    if not put((pending, None)):
                        return
                    pending = []
            put((pending, _DONE))
        except BaseException as exc:  # raised again in the caller's thread
            put((pending, exc))

    thread = threading.Thread(target=produce, name=name, daemon=True)
    thread.start()
    try:
        while True:
            batch_items, end = items.get()
            yield from batch_items
            if end is _DONE:
                return
            if end is not None:
                raise end
    finally:
        stop.set()
        if on_stop is not None:
            on_stop()
        thread.join()


class TurnsClosed(RuntimeError):
    """``Turns.take`` was waiting when the turns were closed (the caller stopped early)."""


class Turns:
    """One turn per key (a camera): ``take`` waits until the key's last turn was given back.

    A replay's source thread takes a camera's turn before it snapshots the scene into that
    camera's renderer, and the caller gives it back once it has rendered the snapshot: the
    next snapshot of a camera never overwrites one not yet rendered, and the source never
    waits for renders of other cameras.
    """

    def __init__(self) -> None:
        self._busy: set = set()
        self._closed = False
        self._changed = threading.Condition()

    def take(self, key: Any) -> None:
        with self._changed:
            while key in self._busy and not self._closed:
                self._changed.wait()
            if self._closed:
                raise TurnsClosed(f'turns closed while waiting for {key!r}')
            self._busy.add(key)

    def give_back(self, key: Any) -> None:
        with self._changed:
            self._busy.discard(key)
            self._changed.notify_all()

    def close(self) -> None:
        """Wake every ``take`` (it raises TurnsClosed); later takes raise at once."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
