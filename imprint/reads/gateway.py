"""How row functions reach the data: through the reader pools, or directly (benchmarks).

Both gateways hand each typed message to the same reader logic (`imprint.actors.readers`):
`ActorReads` sends it to the least-loaded actor of its family's pool, so reads issued
together run at the same time; `DirectReads` calls a logic object in the caller's thread.
"""

from __future__ import annotations

import os
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar, cast

from imprint._primed import Primed
from imprint.actors import read_messages as m
from imprint.actors.lifecycle import Runtime
from imprint.actors.readers import Reading, reading_for
from imprint.reads.deadline import Deadline, Done, Pending, call_deadline
from imprint.store.records import Fact, Record
from imprint.store.sqlite import SourceEntry
from imprint.types import MemoryId, WorkspaceName

__all__ = ["ActorReads", "DirectReads", "Hits", "Primable", "Reads"]

Hits = list[tuple[MemoryId, float]]
# The index reads a recall asks for before its search steps run (`ActorReads.prime`).
Primable = m.VectorQuery | m.LexicalQuery | m.LexicalAndPhrase


class Reads(Protocol):
    runtime: Runtime

    def open(self, workspace: str) -> WorkspaceName: ...
    def deadline(self) -> AbstractContextManager[Deadline]: ...
    def prime(self, queries: list[Primable]) -> None: ...
    def drop_primed(self, queries: list[Primable]) -> None: ...
    def vector(self, q: m.VectorQuery) -> Pending[Hits]: ...
    def neighbors(self, q: m.Neighbors) -> Pending[Hits]: ...
    def lexical(self, q: m.LexicalQuery) -> Pending[Hits]: ...
    def lexical_and_phrase(self, q: m.LexicalAndPhrase) -> Pending[tuple[Hits, Hits]]: ...
    def fetch(self, q: m.FetchRecords) -> Pending[dict[MemoryId, Record]]: ...
    def source_chunks(self, q: m.SourceChunks) -> Pending[tuple[list[Record], int]]: ...
    def source_root(self, q: m.SourceRoot) -> Pending[str]: ...
    def source_entry(self, q: m.SourceEntryQuery) -> Pending[SourceEntry | None]: ...
    def list_sources(self, q: m.ListSources) -> Pending[tuple[list[dict[str, Any]], int]]: ...
    def projects(self, q: m.Projects) -> Pending[list[tuple[str, int]]]: ...
    def topics(self, q: m.Topics) -> Pending[list[tuple[str, int]]]: ...
    def with_topic(self, q: m.WithTopic) -> Pending[list[Record]]: ...
    def facts(self, q: m.FactQuery) -> Pending[list[Fact]]: ...
    def fact(self, q: m.FactById) -> Pending[Fact | None]: ...


class _Gateway:
    """The typed methods of `Reads`, over one `_send`."""

    runtime: Runtime

    def _send(self, msg: m.ReadMessage) -> Pending[Any]:
        raise NotImplementedError

    def deadline(self) -> AbstractContextManager[Deadline]:
        """The deadline of the call in progress, or `readers.timeout_sec` from now."""
        return call_deadline(self.runtime.config.readers.timeout_sec)

    def vector(self, q: m.VectorQuery) -> Pending[Hits]:
        return cast(Pending[Hits], self._send(q))

    def neighbors(self, q: m.Neighbors) -> Pending[Hits]:
        return cast(Pending[Hits], self._send(q))

    def lexical(self, q: m.LexicalQuery) -> Pending[Hits]:
        return cast(Pending[Hits], self._send(q))

    def lexical_and_phrase(self, q: m.LexicalAndPhrase) -> Pending[tuple[Hits, Hits]]:
        return cast(Pending[tuple[Hits, Hits]], self._send(q))

    def fetch(self, q: m.FetchRecords) -> Pending[dict[MemoryId, Record]]:
        return cast(Pending[dict[MemoryId, Record]], self._send(q))

    def source_chunks(self, q: m.SourceChunks) -> Pending[tuple[list[Record], int]]:
        return cast(Pending[tuple[list[Record], int]], self._send(q))

    def source_root(self, q: m.SourceRoot) -> Pending[str]:
        return cast(Pending[str], self._send(q))

    def source_entry(self, q: m.SourceEntryQuery) -> Pending[SourceEntry | None]:
        return cast(Pending[SourceEntry | None], self._send(q))

    def list_sources(self, q: m.ListSources) -> Pending[tuple[list[dict[str, Any]], int]]:
        return cast(Pending[tuple[list[dict[str, Any]], int]], self._send(q))

    def projects(self, q: m.Projects) -> Pending[list[tuple[str, int]]]:
        return cast(Pending[list[tuple[str, int]]], self._send(q))

    def topics(self, q: m.Topics) -> Pending[list[tuple[str, int]]]:
        return cast(Pending[list[tuple[str, int]]], self._send(q))

    def with_topic(self, q: m.WithTopic) -> Pending[list[Record]]:
        return cast(Pending[list[Record]], self._send(q))

    def facts(self, q: m.FactQuery) -> Pending[list[Fact]]:
        return cast(Pending[list[Fact]], self._send(q))

    def fact(self, q: m.FactById) -> Pending[Fact | None]:
        return cast(Pending[Fact | None], self._send(q))


Q = TypeVar("Q", bound=m.ReadMessage)
_Key = tuple[type, WorkspaceName, str, int, Any]


def _key(q: Primable) -> _Key:
    return (type(q), q.workspace, q.text, q.limit, q.filters)


def _by_workspace(queries: list[Q]) -> dict[WorkspaceName, list[Q]]:
    out: dict[WorkspaceName, list[Q]] = {}
    for q in queries:
        out.setdefault(q.workspace, []).append(q)
    return out


def _cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class _Picked:
    """One read's answer out of a batch's: raised when that read alone failed."""

    def __init__(self, batch: Pending[list[Any]], index: int) -> None:
        self._batch = batch
        self._index = index

    def get(self, timeout: float | None = None) -> Any:
        found = self._batch.get(timeout=timeout)[self._index]
        if isinstance(found, Exception):
            raise found
        return found


class ActorReads(_Gateway):
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._primed: Primed[_Key, _Picked] = Primed()

    def vector(self, q: m.VectorQuery) -> Pending[Hits]:
        picked = self._primed.take(_key(q))
        return picked if picked is not None else super().vector(q)

    def lexical(self, q: m.LexicalQuery) -> Pending[Hits]:
        picked = self._primed.take(_key(q))
        return picked if picked is not None else super().lexical(q)

    def lexical_and_phrase(self, q: m.LexicalAndPhrase) -> Pending[tuple[Hits, Hits]]:
        picked = self._primed.take(_key(q))
        return picked if picked is not None else super().lexical_and_phrase(q)

    def fetch(self, q: m.FetchRecords) -> Pending[dict[MemoryId, Record]]:
        """A recall's record fetches go to one reader, one after another: its search steps
        fetch at the same moment (their vector hits came in one batch), and SQLite reads in
        several threads at once hand the GIL over at every row, so four 20-record fetches at
        once took 1.2 ms each against 0.16 ms alone."""
        if not q.recall_id:
            return super().fetch(q)
        pool = self.runtime.pool(q.family)
        return cast(Pending[dict[MemoryId, Record]], pool.send(q, sticky=q.recall_id))

    def prime(self, queries: list[Primable]) -> None:
        """Ask for these index reads now, batched (a recall's search steps, before they fan
        out). Each later read of the same query takes its answer from the batch, until
        `drop_primed` (the recall is done): never an answer that predates a later write.

        The vector reads are ONE read: their texts embedded in one inference, the store
        searched in one call. While that inference holds the cores, the BM25 reads run one
        after another on as many readers as the embedder leaves cores free (at least one):
        four of them at once beside it would only slow it down, and the steps wait for both
        sides. Without vector reads to share the cores with, BM25 reads are not batched."""
        vectors = [q for q in queries if isinstance(q, m.VectorQuery)]
        if len(vectors) < 2:
            return  # one query gains nothing from a batch of one
        self.runtime.prime_queries([q.text for q in vectors])
        for workspace, same in _by_workspace(vectors).items():
            self._batched(m.VectorBatch(workspace=workspace, queries=tuple(same)))
        bm25 = [q for q in queries if not isinstance(q, m.VectorQuery)]
        lanes = max(1, _cores() - self.runtime.config.embedding.threads)
        for workspace, group in _by_workspace(bm25).items():
            for lane in range(min(lanes, len(group))):
                part = tuple(group[lane::lanes])
                self._batched(m.LexicalBatch(workspace=workspace, queries=part))

    def _batched(self, batch: m.VectorBatch | m.LexicalBatch) -> None:
        answer = cast(Pending[list[Any]], self._send(batch))
        for index, q in enumerate(batch.queries):
            self._primed.offer(_key(q), _Picked(answer, index))

    def drop_primed(self, queries: list[Primable]) -> None:
        """Forget what `prime(queries)` left untaken (its recall is done)."""
        self._primed.drop(_key(q) for q in queries)

    def open(self, workspace: str) -> WorkspaceName:
        ws = self.runtime.resolve(workspace)
        self.runtime.workspace(ws)
        return ws

    def _send(self, msg: m.ReadMessage) -> Pending[Any]:
        return self.runtime.pool(msg.family).send(msg)


class DirectReads(_Gateway):
    """The same reader logic in the caller's thread, one read at a time; for benchmarks.

    Queries are embedded in the caller's thread too (no batching worker, no cache)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._logic: dict[m.Family, Reading] = {
            family: reading_for(family, runtime, runtime.embed_query_direct) for family in m.Family
        }

    def open(self, workspace: str) -> WorkspaceName:
        ws = self.runtime.resolve(workspace)
        self.runtime.workspace(ws)
        return ws

    def _send(self, msg: m.ReadMessage) -> Pending[Any]:
        return Done(self._logic[msg.family].handle(msg))

    def prime(self, queries: list[Primable]) -> None:
        """Nothing: each read is made alone, in the caller's thread, here."""

    def drop_primed(self, queries: list[Primable]) -> None:
        """Nothing was primed."""

    def close(self) -> None:
        for logic in self._logic.values():
            logic.close()
