"""Reader actors, pooled per data source: Chroma vectors, FTS5 lexical, SQLite facts.

Each family's logic is a plain class (`VectorReading`, `LexicalReading`, `FactReading`) that
answers one message type per query; `ReaderActor` runs one of them in its own thread (the
benchmarks' `DirectReads` calls the very same objects in the caller's thread). Readers are
stateless apart from their own read-only SQLite connections, so a pool of them lets several
reads of one source run at the same time. A pool hands each message to its least-loaded
actor (`_pool.ActorPool`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import numpy as np
import pykka
from pykka.typing import proxy_method

from imprint._faults import delay, fail
from imprint.actors._pool import ActorPool, Load
from imprint.actors._trace import traced
from imprint.actors.read_messages import (
    FactById,
    FactQuery,
    Family,
    FetchRecords,
    LexicalAndPhrase,
    LexicalQuery,
    ListSources,
    Neighbors,
    Newest,
    ProjectMemories,
    ProjectRoots,
    Projects,
    ProjectSources,
    ReadMessage,
    SameText,
    SourceChunks,
    SourceEntryQuery,
    SourceRoot,
    SupersedeLinks,
    Topics,
    VectorBatch,
    VectorQuery,
    WithTopic,
    answer,
)
from imprint.store.sqlite_read import SqliteReader
from imprint.store.workspace import WorkspaceStore
from imprint.types import WorkspaceName

__all__ = [
    "FactReading",
    "LexicalReading",
    "ReaderActor",
    "ReaderPool",
    "ReaderProxy",
    "Reading",
    "StoreDirectory",
    "VectorReading",
    "pools_for",
    "reading_for",
]

R = TypeVar("R")
# Chunk indexes are small; this stands for "to the last chunk" in SQL.
_LAST = 2**31 - 1


class StoreDirectory(Protocol):
    """Where a reader finds a workspace that the runtime has already opened."""

    def opened(self, workspace: WorkspaceName) -> WorkspaceStore: ...


class Reading(Protocol):
    """One reader family's logic: answers the messages of its family."""

    def handle(self, msg: ReadMessage[Any]) -> Any: ...
    def close(self) -> None: ...


class _SqliteReading:
    """Per-reader read-only connections, one per workspace."""

    def __init__(self, stores: StoreDirectory) -> None:
        self._stores = stores
        self._conns: dict[WorkspaceName, SqliteReader] = {}

    def conn(self, workspace: WorkspaceName) -> SqliteReader:
        conn = self._conns.get(workspace)
        if conn is None:
            conn = self._stores.opened(workspace).reader()
            self._conns[workspace] = conn
        return conn

    def close(self) -> None:
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()


EmbedQuery = Callable[[str], np.ndarray]


class VectorReading:
    def __init__(self, stores: StoreDirectory, embed_query: EmbedQuery) -> None:
        self._stores = stores
        self._embed_query = embed_query

    def handle(self, msg: ReadMessage[Any]) -> Any:
        if isinstance(msg, VectorQuery):
            vector = self._embed_query(msg.text)
            store = self._stores.opened(msg.workspace).vectors
            return answer(msg, store.query(vector, msg.limit, msg.filters))
        if isinstance(msg, VectorBatch):
            # Embedded as one batch when the caller primed the texts (ActorReads does).
            store = self._stores.opened(msg.workspace).vectors
            vectors = [self._embed_query(q.text) for q in msg.queries]
            asks = [(q.limit, q.filters) for q in msg.queries]
            return answer(msg, store.query_many(vectors, asks))
        if isinstance(msg, Neighbors):
            # Empty for an unknown id.
            return answer(msg, self._stores.opened(msg.workspace).vectors.neighbors(msg.id, msg.k))
        raise TypeError(f"vector reader: no handler for {type(msg).__name__}")

    def close(self) -> None:
        pass


class LexicalReading:
    def __init__(self, stores: StoreDirectory) -> None:
        self._sql = _SqliteReading(stores)

    def handle(self, msg: ReadMessage[Any]) -> Any:
        conn = self._sql.conn(msg.workspace)
        match msg:
            case LexicalQuery():
                return answer(msg, conn.match(msg.text, msg.limit, msg.filters))
            case LexicalAndPhrase():
                return answer(msg, conn.match_and_phrase(msg.text, msg.limit, msg.filters))
            case FetchRecords():
                return answer(msg, conn.fetch(msg.ids))
            case SupersedeLinks():
                return answer(msg, conn.supersede_links(msg.ids))
            case SameText():
                return answer(msg, conn.same_text(msg.project, msg.key))
            case SourceChunks():
                end = _LAST if msg.end is None else msg.end
                return answer(msg, conn.source_chunks(msg.project, msg.source, msg.start, end))
            case SourceRoot():
                return answer(msg, conn.source_root(msg.project, msg.source))
            case SourceEntryQuery():
                return answer(msg, conn.source_entry(msg.project, msg.source))
            case ListSources():
                return answer(msg, conn.list_sources(msg.project, msg.lang, msg.layer, msg.limit))
            case Projects():
                return answer(msg, conn.projects())
            case ProjectSources():
                return answer(msg, conn.project_sources(msg.projects, msg.limit))
            case Topics():
                return answer(msg, conn.topics(msg.project, msg.limit))
            case Newest():
                return answer(msg, conn.newest(msg.project, msg.types, msg.kinds, msg.limit))
            case ProjectMemories():
                return answer(
                    msg, conn.project_memories(msg.project, msg.offset, msg.limit, msg.source)
                )
            case ProjectRoots():
                return answer(msg, conn.project_roots())
            case WithTopic():
                return answer(msg, conn.with_topic(msg.topic, msg.limit))
        raise TypeError(f"lexical reader: no handler for {type(msg).__name__}")

    def close(self) -> None:
        self._sql.close()


class FactReading:
    def __init__(self, stores: StoreDirectory) -> None:
        self._sql = _SqliteReading(stores)

    def handle(self, msg: ReadMessage[Any]) -> Any:
        conn = self._sql.conn(msg.workspace)
        if isinstance(msg, FactQuery):
            return answer(msg, conn.facts(msg.subject, msg.predicate, msg.include_ended, msg.limit))
        if isinstance(msg, FactById):
            return answer(msg, conn.fact(msg.fact_id))
        raise TypeError(f"fact reader: no handler for {type(msg).__name__}")

    def close(self) -> None:
        self._sql.close()


def reading_for(family: Family, stores: StoreDirectory, embed_query: EmbedQuery) -> Reading:
    """A new logic object of one family: each reader actor makes its own here."""
    if family is Family.VECTOR:
        return VectorReading(stores, embed_query)
    if family is Family.LEXICAL:
        return LexicalReading(stores)
    return FactReading(stores)


class ReaderActor(pykka.ThreadingActor):
    def __init__(self, logic: Reading, name: str, load: Load) -> None:
        super().__init__()
        self.logic = logic
        self.actor_name = name
        self._load = load

    def on_stop(self) -> None:
        self.logic.close()

    def read(self, msg: ReadMessage[Any]) -> Any:
        try:
            return self._read(msg)
        finally:
            self._load.done()

    @traced()
    def _read(self, msg: ReadMessage[Any]) -> Any:
        delay("reader.read")
        delay(f"reader.{msg.kind}")  # one kind of read stalled alone (tests/support/trace_support)
        return self.logic.handle(msg)


class ReaderProxy:
    """Typed view of `ReaderActor`'s proxy."""

    read = proxy_method(ReaderActor.read)


class ReaderPool:
    """The reader actors of one family; each message goes to the least loaded."""

    def __init__(
        self,
        family: Family,
        size: int,
        stores: StoreDirectory,
        embed_query: EmbedQuery,
    ) -> None:
        self.family = family

        def start(index: int, load: Load) -> pykka.ActorRef[Any]:
            fail(f"readers.start.{family.value}")  # a failed start (tests/test_reads_layer.py)
            logic = reading_for(family, stores, embed_query)
            name = f"{family.value.capitalize()}Reader-{index}"
            return ReaderActor.start(logic, name, load)

        self._actors: ActorPool[ReaderProxy] = ActorPool(f"readers.{family.value}", size, start)
        self.refs = self._actors.refs

    def loads(self) -> list[int]:
        return self._actors.loads()

    def send(self, msg: ReadMessage[R]) -> pykka.Future[R]:
        return self._actors.send(lambda proxy: proxy.read(msg))

    def stop(self) -> list[str]:
        return self._actors.stop()


def pools_for(
    size: int, stores: StoreDirectory, embed_query: EmbedQuery
) -> dict[Family, ReaderPool]:
    """One pool per family, all or none."""
    pools: dict[Family, ReaderPool] = {}
    try:
        for family in Family:
            pools[family] = ReaderPool(family, size, stores, embed_query)
    except BaseException:
        for pool in pools.values():
            pool.stop()
        raise
    return pools
