"""The storage seam: what the layers above ask of a workspace's store, and nothing else.

Two implementations: the local store (SQLite with FTS5, Chroma, the write journal:
`imprint.actors.local_store.LocalStore` adapts the writer and a reader connection) and the team
store on PostgreSQL (`imprint.store.postgres.PostgresStore`). `tests/test_store_contract.py`
holds both to the same answers, up to ranking ties.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

import numpy as np

from imprint.store.records import (
    Fact,
    Filters,
    Record,
    SourceEntry,
    SourceRow,
    SupersedeLink,
    WriteBatch,
)
from imprint.types import MemoryId, WorkspaceName

__all__ = ["MemoryStore"]


class MemoryStore(Protocol):
    """One workspace's store. Every write is acknowledged only once all of it holds."""

    name: WorkspaceName

    def write(
        self, batch: WriteBatch, embeddings: np.ndarray | None = None, *, actor: str = ""
    ) -> None: ...

    def fetch(self, ids: Iterable[str]) -> dict[MemoryId, Record]: ...

    def match(self, query: str, limit: int, filters: Filters) -> list[tuple[MemoryId, float]]:
        """Lexical ranking: records holding the exact phrase first, then any of the words."""
        ...

    def query(
        self, embedding: np.ndarray, limit: int, filters: Filters
    ) -> list[tuple[MemoryId, float]]:
        """Nearest records by cosine similarity, best first."""
        ...

    def neighbors(self, record_id: str, k: int) -> list[tuple[MemoryId, float]]: ...
    def supersede_links(self, ids: Iterable[str]) -> list[SupersedeLink]: ...
    def same_text(self, project: str, key: str) -> MemoryId | None: ...
    def facts(
        self, subject: str, predicate: str, include_ended: bool, limit: int
    ) -> list[Fact]: ...
    def fact(self, fact_id: str) -> Fact | None: ...
    def source_chunks(
        self, project: str, source: str, start: int, end: int
    ) -> tuple[list[Record], int]: ...
    def list_sources(
        self, project: str, lang: str, layer: str, limit: int
    ) -> tuple[list[SourceRow], int]: ...
    def source_entry(self, project: str, source: str) -> SourceEntry | None: ...
    def projects(self) -> list[tuple[str, int]]: ...
    def tombstones(self) -> dict[str, float]: ...
    def close(self) -> None: ...
