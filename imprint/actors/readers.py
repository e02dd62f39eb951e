"""Reader actors, pooled per data source: Chroma vectors, FTS5 lexical, SQLite facts.

Readers are stateless apart from their own read-only SQLite connections, so a pool of them
lets several reads of one source run at the same time.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar

import pykka
from pykka.typing import proxy_method

from imprint.actors._trace import traced
from imprint.actors.messages import (
    FactQuery,
    FetchRecords,
    LexicalQuery,
    Neighbors,
    SqlRead,
    VectorQuery,
)
from imprint.errors import StoreError
from imprint.store.embedder import Embedder
from imprint.store.records import Fact, Record
from imprint.store.sqlite import SqliteStore
from imprint.store.workspace import WorkspaceStore
from imprint.types import MemoryId, WorkspaceName

__all__ = [
    "FactReader",
    "LexicalReader",
    "ReaderPool",
    "StoreDirectory",
    "VectorReader",
]

Hits = list[tuple[MemoryId, float]]


class StoreDirectory(Protocol):
    """Where a reader finds a workspace that the runtime has already opened."""

    def opened(self, workspace: WorkspaceName) -> WorkspaceStore: ...


class _SqliteReading:
    """Per-actor read-only connections, one per workspace."""

    def __init__(self, stores: StoreDirectory) -> None:
        self._stores = stores
        self._conns: dict[WorkspaceName, SqliteStore] = {}

    def conn(self, workspace: WorkspaceName) -> SqliteStore:
        conn = self._conns.get(workspace)
        if conn is None:
            conn = self._stores.opened(workspace).reader()
            self._conns[workspace] = conn
        return conn

    def close(self) -> None:
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()


class VectorReader(pykka.ThreadingActor):
    def __init__(
        self, stores: StoreDirectory, embedder: Callable[[], Embedder], index: int
    ) -> None:
        super().__init__()
        self._stores = stores
        self._embedder = embedder
        self.actor_name = f"VectorReader-{index}"

    @traced("vector_query")
    def query(self, msg: VectorQuery) -> Hits:
        vector = self._embedder().embed([msg.text])[0]
        return self._stores.opened(msg.workspace).vectors.query(vector, msg.limit, msg.filters)

    @traced("neighbors")
    def neighbors(self, msg: Neighbors) -> Hits:
        """The k records nearest to one record, itself excluded; empty for an unknown id."""
        return self._stores.opened(msg.workspace).vectors.neighbors(msg.id, msg.k)


class LexicalReader(pykka.ThreadingActor):
    def __init__(self, stores: StoreDirectory, index: int) -> None:
        super().__init__()
        self._sql = _SqliteReading(stores)
        self.actor_name = f"LexicalReader-{index}"

    def on_stop(self) -> None:
        self._sql.close()

    @traced("lexical_query")
    def query(self, msg: LexicalQuery) -> Hits:
        return self._sql.conn(msg.workspace).match(
            msg.text, msg.limit, msg.filters, phrase_only=msg.phrase_only
        )

    @traced("fetch_records")
    def fetch(self, msg: FetchRecords) -> dict[MemoryId, Record]:
        return self._sql.conn(msg.workspace).fetch(msg.ids)

    def read(self, msg: SqlRead) -> Any:
        return _traced_sql(msg.op)(self, msg)


def _traced_sql(op: str) -> Callable[[LexicalReader, SqlRead], Any]:
    @traced(op)
    def run(self: LexicalReader, msg: SqlRead) -> Any:
        return getattr(self._sql.conn(msg.workspace), msg.op)(**msg.args)

    return run


class FactReader(pykka.ThreadingActor):
    def __init__(self, stores: StoreDirectory, index: int) -> None:
        super().__init__()
        self._sql = _SqliteReading(stores)
        self.actor_name = f"FactReader-{index}"

    def on_stop(self) -> None:
        self._sql.close()

    @traced("fact_query")
    def query(self, msg: FactQuery) -> list[Fact]:
        return self._sql.conn(msg.workspace).facts(
            msg.subject, msg.predicate, msg.include_ended, msg.limit
        )


class VectorReaderProxy:
    query = proxy_method(VectorReader.query)
    neighbors = proxy_method(VectorReader.neighbors)


class LexicalReaderProxy:
    query = proxy_method(LexicalReader.query)
    fetch = proxy_method(LexicalReader.fetch)
    read = proxy_method(LexicalReader.read)


class FactReaderProxy:
    query = proxy_method(FactReader.query)


P = TypeVar("P")


class ReaderPool(Generic[P]):
    """A fixed set of actors of one kind, handed out round-robin."""

    def __init__(self, refs: Sequence[pykka.ActorRef[Any]]) -> None:
        if not refs:
            raise StoreError("readers.pool_size: a pool needs at least one actor")
        self.refs = list(refs)
        self._proxies: list[P] = [ref.proxy() for ref in refs]  # type: ignore[misc]
        self._next = itertools.count()
        self._lock = threading.Lock()

    def pick(self) -> P:
        with self._lock:
            index = next(self._next) % len(self._proxies)
        return self._proxies[index]

    def stop(self) -> None:
        for ref in reversed(self.refs):
            ref.stop(block=True)
