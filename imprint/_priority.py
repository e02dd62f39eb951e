"""Interactive calls first: background work takes its turn when no interactive call is due.

A recall (or another interactive read) holds `interactive()` while it runs; background
work (capture extraction, re-embedding, watch batches, backups) asks for a `turn()` before
each unit of its work, and waits while an interactive call is in flight, on a condition
the last interactive call to finish notifies. No sleeps: the wait ends the moment the
cores are free again. So that a steady stream of calls cannot stop background work for
good, a turn waits at most `max_defer_sec`, and a step deferred by `after_interactive`
is sent by the first call to start or finish after it has waited that long.

No background thread lowers its own scheduling priority: a niced thread that holds the
interpreter's lock on saturated cores stalls every thread waiting for it (measured in the
stress benchmark: a 961 ms gen-0 garbage collection in a niced watch thread while 16
recalls waited past their deadline). The turns above are how background work yields.

One instance per runtime (`Runtime.priority`): nothing here is shared at module level.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

__all__ = ["MAX_DEFER_SEC", "Priority"]


@cache
def _log() -> Any:
    # Imported when first used: the daemon package (which the hook and CLI clients import
    # for its client half) reaches this module, and structlog is no import for a hook.
    from imprint.logs import get_logger

    return get_logger("imprint.priority")


# A background turn waits at most this long for interactive calls to finish.
MAX_DEFER_SEC = 5.0


class Priority:
    """Counts interactive calls in flight; hands background work a turn when there are none."""

    def __init__(
        self,
        *,
        max_defer_sec: float = MAX_DEFER_SEC,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_defer_sec = max_defer_sec
        self._clock = clock
        self._cond = threading.Condition()
        self._in_flight = 0
        self.waiting = 0  # background turns waiting now (tests wait on it)
        self.deferred = 0  # turns that waited for an interactive call
        self.overdue = 0  # turns that gave up waiting after max_defer_sec
        self._after: list[tuple[float, Callable[[], None]]] = []  # (deferred at, step)

    @property
    def in_flight(self) -> int:
        with self._cond:
            return self._in_flight

    @contextmanager
    def interactive(self) -> Iterator[None]:
        with self._cond:
            self._in_flight += 1
            due = self._due(everything=False)
        self._run(due)
        try:
            yield
        finally:
            with self._cond:
                self._in_flight -= 1
                if self._in_flight == 0:
                    self._cond.notify_all()
                due = self._due(everything=self._in_flight == 0)
            self._run(due)

    def _due(self, *, everything: bool) -> list[Callable[[], None]]:
        """The deferred steps to send now (under the lock): all of them when no call is in
        flight, else those that have waited `max_defer_sec` while calls overlapped."""
        if everything:
            due, self._after = self._after, []
            return [run for _, run in due]
        now = self._clock()
        late = [run for at, run in self._after if now - at >= self.max_defer_sec]
        if late:
            self.overdue += len(late)
            self._after = [(at, run) for at, run in self._after if now - at < self.max_defer_sec]
        return late

    @staticmethod
    def _run(steps: list[Callable[[], None]]) -> None:
        for run in steps:
            try:
                run()
            except Exception as exc:  # the interactive call has answered: log, go on
                _log().warning("priority.after_failed", error=f"{type(exc).__name__}: {exc}")

    def turn(self, what: str, stopping: threading.Event | None = None) -> float:
        """Wait until no interactive call is in flight (or `max_defer_sec` passed, or
        `stopping` is set); the seconds waited."""
        started = self._clock()
        with self._cond:
            if self._in_flight == 0:
                return 0.0
            self.waiting += 1
            self.deferred += 1
            self._cond.notify_all()  # a test waiting for this turn to be held sees it
            try:
                until = started + self.max_defer_sec
                while self._in_flight and not (stopping is not None and stopping.is_set()):
                    left = until - self._clock()
                    if left <= 0:
                        self.overdue += 1
                        break
                    # Woken by the last interactive call to finish (or by `wake`).
                    self._cond.wait(timeout=left)
            finally:
                self.waiting -= 1
        waited = self._clock() - started
        _log().debug("priority.turn", what=what, waited_ms=round(waited * 1000, 1))
        return waited

    def after_interactive(self, run: Callable[[], None]) -> None:
        """Call `run` now when no interactive call is in flight, else as the last one in
        flight finishes, or as a call starts or finishes once `run` has waited
        `max_defer_sec` (in that call's thread: `run` must only send, never wait). For an actor's
        next background step: the actor's mailbox stays free for other messages meanwhile,
        where a `turn` would hold it."""
        with self._cond:
            if self._in_flight:
                self.deferred += 1
                self._after.append((self._clock(), run))
                return
        run()

    def wake(self) -> None:
        """Wake every waiting turn to look again (a stop was asked)."""
        with self._cond:
            self._cond.notify_all()

    def wait_for_waiting(self, count: int, timeout: float) -> bool:
        """Until `count` background turns are held (for tests and benchmarks)."""
        with self._cond:
            return self._cond.wait_for(lambda: self.waiting >= count, timeout=timeout)
