"""The local store behind the storage seam (`imprint.store.seam.MemoryStore`).

Writes go through the writer's logic (`Writer`: the journal, Chroma, then SQLite), in the
caller's thread; reads through one read-only SQLite connection and the Chroma collection, as
the reader actors read them. Nothing of the local store changes: this only adapts.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np

from imprint.actors.writer import Writer
from imprint.store.embedder import Embedder
from imprint.store.records import (
    Fact,
    Filters,
    Record,
    SourceEntry,
    SourceRow,
    SupersedeLink,
    WriteBatch,
)
from imprint.store.workspace import WorkspaceStore
from imprint.types import MemoryId, WorkspaceName

__all__ = ["LocalStore"]


class LocalStore:
    def __init__(self, data_dir: Path, name: WorkspaceName, embedder: Embedder) -> None:
        self.name = name
        self.store = WorkspaceStore(data_dir, name, embedder)
        self.writer = Writer(self.store, embedder, min_free_mb=0)
        self.writer.recover()
        self.reader = self.store.reader()

    def write(
        self, batch: WriteBatch, embeddings: np.ndarray | None = None, *, actor: str = ""
    ) -> None:
        # One user's store: the writer is its owner, so `actor` is not recorded.
        self.writer.write(batch, embeddings)

    def fetch(self, ids: Iterable[str]) -> dict[MemoryId, Record]:
        return self.reader.fetch(ids)

    def match(self, query: str, limit: int, filters: Filters) -> list[tuple[MemoryId, float]]:
        return self.reader.match(query, limit, filters)

    def query(
        self, embedding: np.ndarray, limit: int, filters: Filters
    ) -> list[tuple[MemoryId, float]]:
        return self.store.vectors.query(embedding, limit, filters)

    def neighbors(self, record_id: str, k: int) -> list[tuple[MemoryId, float]]:
        return self.store.vectors.neighbors(record_id, k)

    def supersede_links(self, ids: Iterable[str]) -> list[SupersedeLink]:
        return self.reader.supersede_links(ids)

    def same_text(self, project: str, key: str) -> MemoryId | None:
        return self.reader.same_text(project, key)

    def facts(self, subject: str, predicate: str, include_ended: bool, limit: int) -> list[Fact]:
        return self.reader.facts(subject, predicate, include_ended, limit)

    def fact(self, fact_id: str) -> Fact | None:
        return self.reader.fact(fact_id)

    def source_chunks(
        self, project: str, source: str, start: int, end: int
    ) -> tuple[list[Record], int]:
        return self.reader.source_chunks(project, source, start, end)

    def list_sources(
        self, project: str, lang: str, layer: str, limit: int
    ) -> tuple[list[SourceRow], int]:
        return self.reader.list_sources(project, lang, layer, limit)

    def source_entry(self, project: str, source: str) -> SourceEntry | None:
        return self.reader.source_entry(project, source)

    def projects(self) -> list[tuple[str, int]]:
        return self.reader.projects()

    def tombstones(self) -> dict[str, float]:
        rows = self.reader.conn.execute("SELECT key, at FROM tombstones")
        return {str(r[0]): float(r[1]) for r in rows}

    def close(self) -> None:
        try:
            self.reader.close()
        finally:
            self.store.close()
