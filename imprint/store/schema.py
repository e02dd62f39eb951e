"""The workspace SQLite file's tables, how a record maps to a row, and the migrations that
bring a store written by an older version to this schema (the writer runs them on open).

A store older than supersede links, memory keys and tombstones gains those tables on open
(SCHEMA makes what is missing) and its memories their keys (`_key_memories`); a store older
than tombstones starts with none (what it deleted before is not known)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from imprint.store.context import TEXT_FORMAT
from imprint.store.records import Filters, Record, text_key

__all__ = [
    "COLUMNS",
    "SCHEMA",
    "SELECT",
    "filter_clause",
    "memory_key_rows",
    "prepare",
    "record_to_row",
    "row_to_record",
]

SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    content TEXT NOT NULL,
    project TEXT NOT NULL DEFAULT '',
    source TEXT NOT NULL DEFAULT '',
    source_type TEXT NOT NULL DEFAULT 'file',
    chunk_index INTEGER NOT NULL DEFAULT 0,
    chunk_count INTEGER NOT NULL DEFAULT 1,
    type TEXT NOT NULL DEFAULT 'note',
    lang TEXT NOT NULL DEFAULT '',
    layer TEXT NOT NULL DEFAULT '',
    kind TEXT NOT NULL DEFAULT '',
    domains TEXT NOT NULL DEFAULT '[]',
    topics TEXT NOT NULL DEFAULT '[]',
    created_at REAL NOT NULL,
    source_mtime REAL NOT NULL DEFAULT 0,
    content_sha TEXT NOT NULL DEFAULT '',
    tagged_by TEXT NOT NULL DEFAULT 'rules',
    context TEXT NOT NULL DEFAULT '',
    symbol TEXT NOT NULL DEFAULT '',
    line_start INTEGER NOT NULL DEFAULT 0,
    line_end INTEGER NOT NULL DEFAULT 0,
    head TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS records_by_source ON records(project, source, chunk_index);
CREATE VIRTUAL TABLE IF NOT EXISTS records_fts USING fts5(
    content, context, content='records', content_rowid='rowid',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS records_ai AFTER INSERT ON records BEGIN
    INSERT INTO records_fts(rowid, content, context)
    VALUES (new.rowid, new.content, new.context);
END;
CREATE TRIGGER IF NOT EXISTS records_ad AFTER DELETE ON records BEGIN
    INSERT INTO records_fts(records_fts, rowid, content, context)
    VALUES ('delete', old.rowid, old.content, old.context);
END;
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sources (
    project TEXT NOT NULL,
    source TEXT NOT NULL,
    source_type TEXT NOT NULL,
    mtime REAL NOT NULL,
    sha TEXT NOT NULL,
    chunk_count INTEGER NOT NULL,
    root TEXT NOT NULL DEFAULT '',
    validators TEXT NOT NULL DEFAULT '',
    updated_at REAL NOT NULL,
    PRIMARY KEY (project, source)
);
CREATE TABLE IF NOT EXISTS facts (
    id TEXT PRIMARY KEY,
    subject TEXT NOT NULL,
    predicate TEXT NOT NULL,
    object TEXT NOT NULL,
    valid_from REAL NOT NULL,
    ended REAL,
    source TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS facts_by_subject ON facts(subject, predicate);
CREATE TABLE IF NOT EXISTS supersedes (
    old_id TEXT PRIMARY KEY,
    new_id TEXT NOT NULL,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS supersedes_by_new ON supersedes(new_id);
CREATE TABLE IF NOT EXISTS memory_keys (
    id TEXT PRIMARY KEY,
    project TEXT NOT NULL,
    text_key TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS memory_keys_by_key ON memory_keys(project, text_key);
CREATE TABLE IF NOT EXISTS tombstones (
    key TEXT PRIMARY KEY,
    at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS sync_taken (
    key TEXT PRIMARY KEY,
    sha TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS journal (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    payload TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS journal_quarantine (
    seq INTEGER PRIMARY KEY,
    payload TEXT NOT NULL,
    created_at REAL NOT NULL,
    quarantined_at REAL NOT NULL,
    error TEXT NOT NULL
);
"""

COLUMNS = [
    "id",
    "content",
    "project",
    "source",
    "source_type",
    "chunk_index",
    "chunk_count",
    "type",
    "lang",
    "layer",
    "kind",
    "domains",
    "topics",
    "created_at",
    "source_mtime",
    "content_sha",
    "tagged_by",
    "context",
    "symbol",
    "line_start",
    "line_end",
    "head",
]
SELECT = "SELECT " + ", ".join(f"r.{c}" for c in COLUMNS) + " FROM records r"
# The columns an older version's store lacks until a writer migrates it (`_migrate`), as
# they read there: a read-only reader (an export, a session-start briefing) reads such a
# store before any writer has opened it.
_ADDED = {"context": "''", "symbol": "''", "line_start": "0", "line_end": "0", "head": "''"}


def select_for(conn: sqlite3.Connection) -> str:
    """`SELECT` for this connection's store: a column an older version's store does not have
    yet reads as its default (format 3 had no `head`: an export or a briefing of a store no
    writer had opened since the upgrade failed with "no such column: r.head")."""
    have = {row[1] for row in conn.execute("PRAGMA table_info(records)")}
    if not have or have.issuperset(COLUMNS):
        return SELECT
    parts = [f"r.{c}" if c in have else f"{_ADDED[c]} AS {c}" for c in COLUMNS]
    return "SELECT " + ", ".join(parts) + " FROM records r"


def row_to_record(row: Sequence[Any]) -> Record:
    data = dict(zip(COLUMNS, row, strict=True))
    data["domains"] = tuple(json.loads(data["domains"]))
    data["topics"] = tuple(json.loads(data["topics"]))
    return Record.model_validate(data)


def record_to_row(rec: Record) -> tuple[Any, ...]:
    data = rec.model_dump()
    data["domains"] = json.dumps(list(rec.domains))
    data["topics"] = json.dumps(list(rec.topics))
    return tuple(data[c] for c in COLUMNS)


def memory_key_rows(records: Sequence[Record]) -> list[tuple[str, str, str]]:
    """The `memory_keys` rows of these records' memories: (id, project, text_key)."""
    return [(r.id, r.project, text_key(r.content)) for r in records if r.source_type == "memory"]


def filter_clause(filters: Filters, alias: str = "r") -> tuple[str, list[Any]]:
    """The filters as SQL conditions on the records table (joined by AND), and their values."""
    pairs = filters.pairs()
    sql = " AND ".join(f"{alias}.{k} = ?" for k, _ in pairs)
    return sql, [v for _, v in pairs]


def prepare(conn: sqlite3.Connection) -> None:
    """Make a read-write connection's file this schema: WAL, full sync, tables, migrations."""
    conn.execute("PRAGMA journal_mode=WAL")
    # FULL: an acknowledged write survives power loss, not only a process crash.
    conn.execute("PRAGMA synchronous=FULL")
    fresh = not _has_table(conn, "records")
    rebuild = _migrate(conn)
    conn.executescript(SCHEMA)
    if rebuild:
        conn.execute("INSERT INTO records_fts(records_fts) VALUES ('rebuild')")
    # Kept in the index's own settings: the merges `merge_index` does start at two.
    conn.execute("INSERT INTO records_fts(records_fts, rank) VALUES ('usermerge', 2)")
    if fresh:
        with conn:
            conn.execute(
                "INSERT OR REPLACE INTO meta VALUES (?, ?)", ("text_format", str(TEXT_FORMAT))
            )
    _key_memories(conn)
    conn.commit()


def _key_memories(conn: sqlite3.Connection) -> None:
    """Give the memories of a store older than `memory_keys` their keys (what near-duplicate
    stores are found by). The flag is set in the same transaction, so a crash leaves it to
    the next open."""
    done = conn.execute("SELECT value FROM meta WHERE key = 'memory_keys'").fetchone()
    if done is not None:
        return
    with conn:
        rows = conn.execute(f"{SELECT} WHERE r.source_type = 'memory'").fetchall()
        conn.executemany(
            "INSERT OR REPLACE INTO memory_keys VALUES (?, ?, ?)",
            memory_key_rows([row_to_record(row) for row in rows]),
        )
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('memory_keys', '1')")


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,))
    return row.fetchone() is not None


_LINES = (("line_start", "INTEGER NOT NULL DEFAULT 0"), ("line_end", "INTEGER NOT NULL DEFAULT 0"))
_HEAD = ("head", "TEXT NOT NULL DEFAULT ''")


def _migrate(conn: sqlite3.Connection) -> bool:
    """Bring a store written by an older version to this schema: records gain `context`,
    `symbol` and the line range, and the FTS index its second column. Returns whether the
    FTS index was dropped (the caller rebuilds it from the records once SCHEMA has made it
    again)."""
    if not _has_table(conn, "records"):
        return False
    columns = {row[1] for row in conn.execute("PRAGMA table_info(records)")}
    if "context" not in columns:
        conn.execute("ALTER TABLE records ADD COLUMN context TEXT NOT NULL DEFAULT ''")
    for name, kind in (("symbol", "TEXT NOT NULL DEFAULT ''"), *_LINES, _HEAD):
        if name not in columns:  # text formats 3 and 4 (the writer re-chunks old chunks)
            conn.execute(f"ALTER TABLE records ADD COLUMN {name} {kind}")
    fts = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'records_fts'").fetchone()
    if fts is not None and "context" in fts[0]:
        return False
    # Dropped (or lost by a crash between this and the rebuild): made again and rebuilt.
    for statement in (
        "DROP TRIGGER IF EXISTS records_ai",
        "DROP TRIGGER IF EXISTS records_ad",
        "DROP TABLE IF EXISTS records_fts",
    ):
        conn.execute(statement)
    return True
