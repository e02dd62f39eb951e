"""One deadline per call, reaching every read the call causes.

A tool call (or CLI command) binds its deadline once at the edge; a recall step binds the
recall's. Row functions wait on their reads with `Deadline.wait`, which gives each wait only
what is left, and every reader message they send carries the same instant, so a reader that
takes it too late skips it instead of doing work nobody waits for.

It lives with the actors, under reads, writes and ingest alike: a write waits on its
writer's answer under the same deadline as a read waits on its reader's (STYLE.md: a piece
used by two rooms lives in the lower one).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Generic, Protocol, TypeVar

import pykka

from imprint.actors._trace import bind_deadline, bound_deadline
from imprint.errors import DeadlineExceeded

__all__ = ["Deadline", "Done", "Pending", "call_deadline"]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class Pending(Protocol[T_co]):
    def get(self, *, timeout: float | None = None) -> T_co: ...


class Done(Generic[T]):
    """An answer that is already there (a read done in the caller's thread)."""

    def __init__(self, value: T) -> None:
        self.value = value

    def get(self, *, timeout: float | None = None) -> T:
        return self.value


class Deadline:
    """One deadline for a group of waits: each wait gets only what is left."""

    def __init__(self, seconds: float, *, at: float | None = None) -> None:
        self.at = time.monotonic() + seconds if at is None else at
        self.seconds = seconds

    def left(self) -> float:
        return max(0.0, self.at - time.monotonic())

    def wait(self, pending: Pending[T], what: str) -> T:
        try:
            return pending.get(timeout=self.left())
        except pykka.Timeout as exc:
            raise DeadlineExceeded(f"{what}: no answer within {self.seconds:g} s") from exc


@contextmanager
def call_deadline(seconds: float) -> Iterator[Deadline]:
    """The deadline of the call in progress: the one already bound (a recall step's, a tool
    call's), or a new one `seconds` from now, bound for the messages this call sends."""
    at = bound_deadline()
    if at is not None:
        yield Deadline(max(0.0, at - time.monotonic()), at=at)
        return
    deadline = Deadline(seconds)
    with bind_deadline(deadline.at):
        yield deadline
