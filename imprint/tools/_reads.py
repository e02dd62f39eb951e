"""How row functions reach the data: through the reader pools, or directly (benchmarks).

Both gateways run the same store functions; the actor one sends each read as a message to
a pooled reader, so reads issued together run at the same time.
"""

from __future__ import annotations

import time
from typing import Any, Generic, Protocol, TypeVar, cast

import pykka

from imprint.actors.lifecycle import Runtime
from imprint.actors.messages import (
    FactQuery,
    FetchRecords,
    LexicalQuery,
    Neighbors,
    SqlRead,
    VectorQuery,
)
from imprint.errors import StoreError
from imprint.store.records import Fact, Record
from imprint.store.sqlite import SqliteStore
from imprint.types import MemoryId, WorkspaceName

__all__ = ["ActorReads", "Deadline", "DirectReads", "Pending", "Reads"]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
Hits = list[tuple[MemoryId, float]]


class Pending(Protocol[T_co]):
    def get(self, *, timeout: float | None = None) -> T_co: ...


class Deadline:
    """One deadline for a group of waits: each wait gets only what is left."""

    def __init__(self, seconds: float) -> None:
        self.at = time.monotonic() + seconds
        self.seconds = seconds

    def left(self) -> float:
        return max(0.0, self.at - time.monotonic())

    def wait(self, pending: Pending[T], what: str) -> T:
        try:
            return pending.get(timeout=self.left())
        except pykka.Timeout as exc:
            raise StoreError(f"{what}: no answer within {self.seconds:g} s") from exc


class _Done(Generic[T]):
    def __init__(self, value: T) -> None:
        self.value = value

    def get(self, *, timeout: float | None = None) -> T:
        return self.value


class Reads(Protocol):
    runtime: Runtime

    def open(self, workspace: str) -> WorkspaceName: ...
    def vector(self, q: VectorQuery) -> Pending[Hits]: ...
    def lexical(self, q: LexicalQuery) -> Pending[Hits]: ...
    def fetch(self, q: FetchRecords) -> Pending[dict[MemoryId, Record]]: ...
    def facts(self, q: FactQuery) -> Pending[list[Fact]]: ...
    def neighbors(self, q: Neighbors) -> Pending[Hits]: ...
    def sql(self, q: SqlRead) -> Pending[Any]: ...


class ActorReads:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def open(self, workspace: str) -> WorkspaceName:
        ws = self.runtime.resolve(workspace)
        self.runtime.workspace(ws)
        return ws

    def _pools(self) -> Any:
        rt = self.runtime
        if rt.vector_pool is None or rt.lexical_pool is None or rt.fact_pool is None:
            raise StoreError("runtime: reader pools are not started")
        return rt.vector_pool, rt.lexical_pool, rt.fact_pool

    def vector(self, q: VectorQuery) -> Pending[Hits]:
        return cast(Pending[Hits], self._pools()[0].pick().query(q))

    def lexical(self, q: LexicalQuery) -> Pending[Hits]:
        return cast(Pending[Hits], self._pools()[1].pick().query(q))

    def fetch(self, q: FetchRecords) -> Pending[dict[MemoryId, Record]]:
        return cast(Pending[dict[MemoryId, Record]], self._pools()[1].pick().fetch(q))

    def facts(self, q: FactQuery) -> Pending[list[Fact]]:
        return cast(Pending[list[Fact]], self._pools()[2].pick().query(q))

    def neighbors(self, q: Neighbors) -> Pending[Hits]:
        return cast(Pending[Hits], self._pools()[0].pick().neighbors(q))

    def sql(self, q: SqlRead) -> Pending[Any]:
        return cast(Pending[Any], self._pools()[1].pick().read(q))


class DirectReads:
    """The same store calls in the caller's thread, one at a time; for benchmarks."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._conns: dict[WorkspaceName, SqliteStore] = {}

    def open(self, workspace: str) -> WorkspaceName:
        ws = self.runtime.resolve(workspace)
        store = self.runtime.workspace(ws)
        if ws not in self._conns:
            self._conns[ws] = store.reader()
        return ws

    def vector(self, q: VectorQuery) -> Pending[Hits]:
        vector = self.runtime.embedder().embed([q.text])[0]
        store = self.runtime.opened(q.workspace)
        return _Done(store.vectors.query(vector, q.limit, q.filters))

    def lexical(self, q: LexicalQuery) -> Pending[Hits]:
        conn = self._conns[q.workspace]
        return _Done(conn.match(q.text, q.limit, q.filters, phrase_only=q.phrase_only))

    def fetch(self, q: FetchRecords) -> Pending[dict[MemoryId, Record]]:
        return _Done(self._conns[q.workspace].fetch(q.ids))

    def facts(self, q: FactQuery) -> Pending[list[Fact]]:
        conn = self._conns[q.workspace]
        return _Done(conn.facts(q.subject, q.predicate, q.include_ended, q.limit))

    def neighbors(self, q: Neighbors) -> Pending[Hits]:
        return _Done(self.runtime.opened(q.workspace).vectors.neighbors(q.id, q.k))

    def sql(self, q: SqlRead) -> Pending[Any]:
        return _Done(getattr(self._conns[q.workspace], q.op)(**q.args))

    def close(self) -> None:
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()
