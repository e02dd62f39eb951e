"""How row functions reach the data: through the reader pools, or directly (benchmarks).

Both gateways hand each typed message to the same reader logic (`imprint.actors.readers`):
`ActorReads` sends it to the least-loaded actor of its family's pool, so reads issued
together run at the same time; `DirectReads` calls a logic object in the caller's thread.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol, cast

import numpy as np

from imprint._primed import Primed
from imprint.actors import read_messages as m
from imprint.actors.lifecycle import Runtime
from imprint.actors.readers import Reading, reading_for
from imprint.reads.deadline import Deadline, Done, Pending, call_deadline
from imprint.store.records import Fact, Record
from imprint.store.sqlite import SourceEntry
from imprint.types import MemoryId, WorkspaceName

__all__ = ["ActorReads", "DirectReads", "Hits", "Reads"]

Hits = list[tuple[MemoryId, float]]


class Reads(Protocol):
    runtime: Runtime

    def open(self, workspace: str) -> WorkspaceName: ...
    def deadline(self) -> AbstractContextManager[Deadline]: ...
    def prime_vectors(self, queries: list[m.VectorQuery]) -> None: ...
    def drop_primed(self, queries: list[m.VectorQuery]) -> None: ...
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
    def project_sources(self, q: m.ProjectSources) -> Pending[dict[str, list[tuple[str, int]]]]: ...
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

    def project_sources(self, q: m.ProjectSources) -> Pending[dict[str, list[tuple[str, int]]]]:
        return cast(Pending[dict[str, list[tuple[str, int]]]], self._send(q))

    def topics(self, q: m.Topics) -> Pending[list[tuple[str, int]]]:
        return cast(Pending[list[tuple[str, int]]], self._send(q))

    def with_topic(self, q: m.WithTopic) -> Pending[list[Record]]:
        return cast(Pending[list[Record]], self._send(q))

    def facts(self, q: m.FactQuery) -> Pending[list[Fact]]:
        return cast(Pending[list[Fact]], self._send(q))

    def fact(self, q: m.FactById) -> Pending[Fact | None]:
        return cast(Pending[Fact | None], self._send(q))


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


class ActorReads(_Gateway):
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._primed: Primed[_Key, _Picked] = Primed()

    def vector(self, q: m.VectorQuery) -> Pending[Hits]:
        picked = self._primed.take(_key(q))
        return picked if picked is not None else super().vector(q)

    def prime_vectors(self, queries: list[m.VectorQuery]) -> None:
        """Ask for these vector queries now, as ONE read (a recall's search steps, before
        they fan out): their texts embedded in one inference, the store searched in one
        call. Each later `vector` of the same query takes its hits from that answer, until
        `drop_primed` (the recall is done): never hits that predate a later write."""
        if len(queries) < 2:
            return  # one query gains nothing from a batch of one
        by_workspace: dict[WorkspaceName, list[m.VectorQuery]] = {}
        for q in queries:
            by_workspace.setdefault(q.workspace, []).append(q)
        self.runtime.prime_queries([q.text for q in queries])
        for workspace, group in by_workspace.items():
            batch = cast(
                Pending[list[Hits]],
                self._send(m.VectorBatch(workspace=workspace, queries=tuple(group))),
            )
            for index, q in enumerate(group):
                self._primed.offer(_key(q), _Picked(batch, index))

    def drop_primed(self, queries: list[m.VectorQuery]) -> None:
        """Forget what `prime_vectors(queries)` left untaken (its recall is done)."""
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

        def embed(text: str) -> np.ndarray:
            return runtime.embedder().embed([text])[0]

        self._logic: dict[m.Family, Reading] = {
            family: reading_for(family, runtime, embed) for family in m.Family
        }

    def open(self, workspace: str) -> WorkspaceName:
        ws = self.runtime.resolve(workspace)
        self.runtime.workspace(ws)
        return ws

    def _send(self, msg: m.ReadMessage) -> Pending[Any]:
        return Done(self._logic[msg.family].handle(msg))

    def prime_vectors(self, queries: list[m.VectorQuery]) -> None:
        """Nothing: each vector query is read alone, in the caller's thread, here."""

    def drop_primed(self, queries: list[m.VectorQuery]) -> None:
        """Nothing was primed."""

    def close(self) -> None:
        for logic in self._logic.values():
            logic.close()
