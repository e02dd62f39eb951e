"""One consistent read of a whole workspace's SQLite file, in a stable order (`imprint export`).

The file is opened read-only and read inside ONE read transaction: in WAL mode that is a
snapshot, so a daemon that owns the store may keep writing meanwhile. Every write reaches
SQLite as one transaction (its records, its source entry, its facts and the end of its
journal entry together), so a snapshot never holds half a write. Vectors are not read: an
export carries text, and an import embeds it again.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from imprint.store.records import Fact, Record, SourceEntry, SupersedeLink
from imprint.store.schema import row_to_record, select_for
from imprint.types import MemoryId

__all__ = ["Dump", "dump"]

_FACT_KEYS = tuple(Fact.model_fields)
_ENTRY_KEYS = tuple(SourceEntry.model_fields)


class Dump:
    """The snapshot's reads; each in one order only, so two dumps of one store are equal."""

    def __init__(self, conn: sqlite3.Connection | None) -> None:
        self._conn = conn  # None: the workspace has no SQLite file yet (nothing stored)
        # The records' SELECT (a store no writer has migrated yet lacks newer columns).
        self._records = "" if conn is None else select_for(conn)

    def _rows(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        return [] if self._conn is None else self._conn.execute(sql, params).fetchall()

    def counts(self) -> dict[str, int]:
        """Memories, sources, their chunks and facts."""
        memories = len(self._rows("SELECT 1 FROM records WHERE source_type = 'memory'"))
        chunks = len(self._rows("SELECT 1 FROM records WHERE source_type != 'memory'"))
        facts = len(self._rows("SELECT 1 FROM facts"))
        return {
            "memories": memories,
            "sources": len(self.source_keys()),
            "chunks": chunks,
            "facts": facts,
        }

    def memories(self) -> Iterator[Record]:
        for row in self._rows(f"{self._records} WHERE r.source_type = 'memory' ORDER BY r.id"):
            yield row_to_record(row)

    def source_keys(self) -> list[tuple[str, str]]:
        """Every (project, source) that records or the source registry name, sorted."""
        rows = self._rows(
            "SELECT project, source FROM records WHERE source_type != 'memory' "
            "UNION SELECT project, source FROM sources ORDER BY 1, 2"
        )
        return [(str(p), str(s)) for p, s in rows]

    def roots(self) -> dict[tuple[str, str], str]:
        """The registry root of each (project, source) that has one."""
        rows = self._rows("SELECT project, source, root FROM sources WHERE root != ''")
        return {(str(p), str(s)): str(r) for p, s, r in rows}

    def sources(self) -> Iterator[tuple[str, str, SourceEntry | None, list[Record]]]:
        """Each source's registry entry (None where it has none) and its chunks in order."""
        for project, source in self.source_keys():
            found = self._rows(
                "SELECT " + ", ".join(_ENTRY_KEYS) + " FROM sources "
                "WHERE project = ? AND source = ?",
                (project, source),
            )
            entry = (
                SourceEntry.model_validate(dict(zip(_ENTRY_KEYS, found[0], strict=True)))
                if found
                else None
            )
            records = self._rows(
                f"{self._records} WHERE r.project = ? AND r.source = ? "
                "AND r.source_type != 'memory' ORDER BY r.chunk_index, r.id",
                (project, source),
            )
            yield project, source, entry, [row_to_record(row) for row in records]

    def links(self) -> list[SupersedeLink]:
        """Every supersede link (older memory, newer memory, when), by the older one's id."""
        # A store older than the links has no table until a writer opens it.
        if not self._rows(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'supersedes'"
        ):
            return []
        rows = self._rows("SELECT old_id, new_id, at FROM supersedes ORDER BY old_id, new_id")
        return [SupersedeLink.model_validate({"old": o, "new": n, "at": a}) for o, n, a in rows]

    def facts(self) -> Iterator[Fact]:
        for row in self._rows("SELECT " + ", ".join(_FACT_KEYS) + " FROM facts ORDER BY id"):
            yield Fact.model_validate(dict(zip(_FACT_KEYS, row, strict=True)))

    def tombstones(self) -> dict[str, float]:
        """What this store deleted (`imprint.store.tombstones`): key -> when."""
        if self._conn is None or not self._has("tombstones"):
            return {}  # a store no writer has opened since tombstones came
        rows = self._rows("SELECT key, at FROM tombstones")
        return {str(k): float(str(at)) for k, at in rows}

    def sync_taken(self) -> dict[str, str]:
        """The line last taken from another machine for each key: key -> its SHA-256."""
        if self._conn is None or not self._has("sync_taken"):
            return {}
        return {str(k): str(sha) for k, sha in self._rows("SELECT key, sha FROM sync_taken")}

    def supersede_links(self) -> list[SupersedeLink]:
        """Every supersede link, by the superseded memory's id."""
        if self._conn is None or not self._has("supersedes"):
            return []
        rows = self._rows("SELECT old_id, new_id, at FROM supersedes ORDER BY old_id")
        return [
            SupersedeLink(old=MemoryId(str(o)), new=MemoryId(str(n)), at=float(str(a)))
            for o, n, a in rows
        ]

    def _has(self, table: str) -> bool:
        return bool(self._rows("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)))


@contextmanager
def dump(path: Path) -> Iterator[Dump]:
    """A snapshot of the SQLite file at `path` (empty when there is no file)."""
    if not path.is_file():
        yield Dump(None)
        return
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        # Held open across every read below: each sees the same committed state.
        conn.execute("BEGIN")
        yield Dump(conn)
    finally:
        conn.rollback()
        conn.close()
