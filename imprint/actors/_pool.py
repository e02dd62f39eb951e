"""Long-lived pools of actors of one kind; each message goes to the least-loaded actor.

An actor's load is the messages handed to it and not yet handled: the pool adds one when it
sends, the actor takes one off when its handler returns (`Load.done` in a `finally`). The
pool picks the fewest outstanding messages; among equals, the actor whose oldest outstanding
message is the youngest (a reader stuck on one slow read has the oldest), then round-robin.
So a reader that is stuck does not collect the next call's messages, as blind round-robin
would hand them to it.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Generic, TypeVar, cast

import pykka

from imprint.errors import StoreError

__all__ = ["ActorPool", "Load"]

P = TypeVar("P")
R = TypeVar("R")


class Load:
    """Messages sent to one actor and not yet handled, with when each was sent.

    A mailbox is first in, first out, so the message handled is always the oldest.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sent: deque[float] = deque()

    @property
    def value(self) -> int:
        return len(self._sent)

    def sent(self) -> None:
        with self._lock:
            self._sent.append(time.monotonic())

    def done(self) -> None:
        with self._lock:
            if self._sent:
                self._sent.popleft()

    def key(self) -> tuple[int, float]:
        """Lower is better: fewer outstanding, then the youngest oldest one."""
        with self._lock:
            return len(self._sent), -self._sent[0] if self._sent else 0.0


class ActorPool(Generic[P]):
    """`size` actors made by `start(index, load)`, reached through proxies of type P."""

    def __init__(
        self,
        name: str,
        size: int,
        start: Callable[[int, Load], pykka.ActorRef[Any]],
    ) -> None:
        if size < 1:
            raise StoreError(f"{name}: a pool needs at least one actor")
        self.name = name
        self._loads = [Load() for _ in range(size)]
        self.refs: list[pykka.ActorRef[Any]] = []
        try:
            for i, load in enumerate(self._loads):
                self.refs.append(start(i, load))
        except BaseException:
            self.stop()
            raise
        self._proxies = [cast(P, ref.proxy()) for ref in self.refs]
        self._lock = threading.Lock()
        self._turn = 0

    def loads(self) -> list[int]:
        return [load.value for load in self._loads]

    def _pick(self) -> int:
        with self._lock:
            n = len(self._loads)
            start = self._turn
            self._turn = (self._turn + 1) % n
            index = min(range(n), key=lambda i: (*self._loads[i].key(), (i - start) % n))
            self._loads[index].sent()
            return index

    def send(self, call: Callable[[P], pykka.Future[R]]) -> pykka.Future[R]:
        """`call(proxy)` on the least-loaded actor; its handler must call `Load.done`."""
        index = self._pick()
        try:
            return call(self._proxies[index])
        except pykka.ActorDeadError as exc:
            self._loads[index].done()
            raise StoreError(f"{self.name}: the actor is not running") from exc

    def stop(self) -> list[str]:
        """Stop every actor, last started first; returns the failures."""
        failures: list[str] = []
        for ref in reversed(self.refs):
            try:
                ref.stop(block=True, timeout=60)
            except Exception as exc:
                failures.append(f"{ref}: {type(exc).__name__}: {exc}")
        return failures
