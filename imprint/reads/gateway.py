"""How row functions reach the data: one typed `ask` to the reader pools.

`ActorReads` sends each message to the least-loaded actor of its family's pool, so reads
issued together run at the same time. A message names the type of its answer
(`VectorQuery` is a `ReadMessage[Hits]`), so `ask` gives back a `Pending` of that type and
nothing above casts; the caller waits on it under its call's `Deadline`.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

from imprint._primed import Primed
from imprint.actors import read_messages as m
from imprint.actors.deadline import Deadline, Pending, call_deadline
from imprint.actors.lifecycle import Runtime
from imprint.actors.read_messages import Hits
from imprint.actors.write_messages import Check
from imprint.store.applying import Applying
from imprint.store.check import IndexCheck
from imprint.types import WorkspaceName

__all__ = ["STATUS_TIMEOUT_SEC", "ActorReads", "Hits", "Reads"]

STATUS_TIMEOUT_SEC = 120.0

R = TypeVar("R")


class Reads(Protocol):
    runtime: Runtime
    applying: Applying  # what the writers are applying now (`store.applying`)

    def open(self, workspace: str) -> WorkspaceName: ...
    def deadline(self) -> AbstractContextManager[Deadline]: ...
    def prime_vectors(self, queries: list[m.VectorQuery]) -> None: ...
    def drop_primed(self, queries: list[m.VectorQuery]) -> None: ...
    def ask(self, msg: m.ReadMessage[R]) -> Pending[R]: ...
    def check(
        self, ws: WorkspaceName, deep: bool = False, *, seconds: float = STATUS_TIMEOUT_SEC
    ) -> IndexCheck: ...


_Key = tuple[WorkspaceName, str, int, Any]


def _key(q: m.VectorQuery) -> _Key:
    return (q.workspace, q.text, q.limit, q.filters)


class _Picked:
    """One query's hits out of a batch's answer."""

    def __init__(self, batch: Pending[list[Hits]], index: int) -> None:
        self._batch = batch
        self._index = index

    def get(self, timeout: float | None = None) -> Hits:
        return self._batch.get(timeout=timeout)[self._index]


class ActorReads:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.applying = runtime.applying
        # Each entry answers the very VectorQuery it is keyed by, so it is of that query's
        # answer type; typed loosely because `ask` cannot name R from an isinstance.
        self._primed: Primed[_Key, Pending[Any]] = Primed()

    def ask(self, msg: m.ReadMessage[R]) -> Pending[R]:
        """Send `msg` to the least-loaded reader of its family; a vector query that
        `prime_vectors` asked for already takes its hits from that answer instead."""
        if isinstance(msg, m.VectorQuery):
            picked = self._primed.take(_key(msg))
            if picked is not None:
                return picked
        return self.runtime.pool(msg.family).send(msg)

    def deadline(self) -> AbstractContextManager[Deadline]:
        """The deadline of the call in progress, or `readers.timeout_sec` from now."""
        return call_deadline(self.runtime.config.readers.timeout_sec)

    def prime_vectors(self, queries: list[m.VectorQuery]) -> None:
        """Ask for these vector queries now, as ONE read (a recall's search steps, before
        they fan out): their texts embedded in one inference, the store searched in one
        call. Each later `ask` of the same query takes its hits from that answer, until
        `drop_primed` (the recall is done): never hits that predate a later write."""
        if len(queries) < 2:
            return  # one query gains nothing from a batch of one
        by_workspace: dict[WorkspaceName, list[m.VectorQuery]] = {}
        for q in queries:
            by_workspace.setdefault(q.workspace, []).append(q)
        self.runtime.prime_queries([q.text for q in queries])
        for workspace, group in by_workspace.items():
            batch = self.ask(m.VectorBatch(workspace=workspace, queries=tuple(group)))
            for index, q in enumerate(group):
                self._primed.offer(_key(q), _Picked(batch, index))

    def drop_primed(self, queries: list[m.VectorQuery]) -> None:
        """Forget what `prime_vectors(queries)` left untaken (its recall is done)."""
        self._primed.drop(_key(q) for q in queries)

    def open(self, workspace: str) -> WorkspaceName:
        ws = self.runtime.resolve(workspace)
        self.runtime.workspace(ws)
        return ws

    def check(
        self, ws: WorkspaceName, deep: bool = False, *, seconds: float = STATUS_TIMEOUT_SEC
    ) -> IndexCheck:
        """The workspace's counts and whether its two indexes agree (record by record with
        `deep`). A read the writer answers: in its mailbox, no write is half-applied while
        the indexes are compared."""
        with call_deadline(seconds) as deadline:
            return deadline.wait(self.runtime.writer(ws).check(Check(deep=deep)), "status")
