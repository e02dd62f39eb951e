"""One SQLite file per workspace: records with their FTS5 index, facts, sources, write journal.

The writer opens it read-write; each reader actor opens its own read-only connection
(WAL mode lets them read while the writer commits).
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from imprint._fs import private_file
from imprint.errors import InputError, StoreError, damaged_sqlite
from imprint.store.context import TEXT_FORMAT
from imprint.store.records import Fact, Record
from imprint.store.text import identifier_parts
from imprint.types import MemoryId

__all__ = [
    "Filters",
    "SourceEntry",
    "SqliteStore",
    "WriteBatch",
    "check_query",
    "fts_phrase",
    "fts_terms",
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
    context TEXT NOT NULL DEFAULT ''
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

_COLUMNS = [
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
]
_SELECT = "SELECT " + ", ".join(f"r.{c}" for c in _COLUMNS) + " FROM records r"


class Filters(BaseModel):
    model_config = ConfigDict(frozen=True)

    project: str = ""
    type: str = ""
    lang: str = ""
    layer: str = ""

    def pairs(self) -> list[tuple[str, str]]:
        return [(k, v) for k, v in self.model_dump().items() if v]


class SourceEntry(BaseModel):
    model_config = ConfigDict(frozen=True)

    project: str
    source: str
    source_type: str
    mtime: float
    sha: str
    chunk_count: int
    root: str = ""
    validators: str = ""


class WriteBatch(BaseModel):
    """Everything one acknowledged write changes; journaled whole before it is applied.

    Records of a source in `set_sources` or `drop_sources` that are not among `upserts` are
    deleted: the writer adds their ids to `delete_ids` before journaling.
    """

    model_config = ConfigDict(frozen=True)

    upserts: tuple[Record, ...] = ()
    delete_ids: tuple[MemoryId, ...] = ()
    set_sources: tuple[SourceEntry, ...] = ()
    drop_sources: tuple[tuple[str, str], ...] = ()
    add_facts: tuple[Fact, ...] = ()
    end_facts: tuple[tuple[str, float], ...] = ()


_WORD = re.compile(r"\w+", re.UNICODE)
# The any-of-the-words BM25 query ranks every record holding any word, so its cost grows with
# the store. Above this many records it keeps the query's rarest words, while the records
# holding them add up to at most this many; common words (which BM25 weighs least) go.
TERM_DOC_BUDGET = 5000
# bm25() first counts every record holding each of its terms, so in such a store it ranks
# only words held by at most TERM_DOC_BUDGET records. The exact phrase (a phrase of common
# words may be in many records) and a query whose every word is over the budget take their
# newest matches instead, unscored: newest first is the order FTS5 walks, so LIMIT ends it.
MAX_QUERY_CHARS = 2000
MAX_QUERY_TERMS = 200
# The BM25 index is a stack of segments: every write transaction adds one, and FTS5 merges
# them only once four share a level, so an ingested store keeps many (17 for the corpus's
# 1,586 records) and every query reads each word in each of them: BM25 took 3.4 ms for four
# queries there, 2.5 ms with one segment (the same rankings). The writer merges segments as
# soon as two share a level (`merge_index`), in steps of about this many pages written.
MERGE_PAGES = 256


def check_query(text: str, argument: str) -> str:
    """A query within the caps (a 3.9 MB query once took 42 s), or a one-line InputError."""
    if len(text) > MAX_QUERY_CHARS:
        raise InputError(
            f"{argument}: {len(text)} characters; at most {MAX_QUERY_CHARS} (ask in fewer words)"
        )
    terms = len(_WORD.findall(text))
    if terms > MAX_QUERY_TERMS:
        raise InputError(
            f"{argument}: {terms} terms; at most {MAX_QUERY_TERMS} (ask in fewer words)"
        )
    return text


def fts_terms(query: str) -> str:
    """Any of the query's words, each quoted so FTS5 syntax in user text is inert.

    A CamelCase word also matches its parts as a phrase, so `readOnlyHint` finds text that
    writes `read_only_hint` or "read only hint" (the tokenizer already splits at `_` and `.`).
    """
    terms = []
    for word in _WORD.findall(query):
        parts = identifier_parts(word)
        if len(parts) > 1 and "_" not in word:
            terms.append(f'("{word}" OR "{" ".join(parts)}")')
        else:
            terms.append(f'"{word}"')
    return " OR ".join(terms)


def fts_phrase(query: str) -> str:
    words = _WORD.findall(query)
    return '"' + " ".join(words) + '"' if len(words) > 1 else ""


def _row_to_record(row: Sequence[Any]) -> Record:
    data = dict(zip(_COLUMNS, row, strict=True))
    data["domains"] = tuple(json.loads(data["domains"]))
    data["topics"] = tuple(json.loads(data["topics"]))
    return Record.model_validate(data)


def _record_to_row(rec: Record) -> tuple[Any, ...]:
    data = rec.model_dump()
    data["domains"] = json.dumps(list(rec.domains))
    data["topics"] = json.dumps(list(rec.topics))
    return tuple(data[c] for c in _COLUMNS)


def _where(filters: Filters, alias: str = "r") -> tuple[str, list[Any]]:
    pairs = filters.pairs()
    sql = " AND ".join(f"{alias}.{k} = ?" for k, _ in pairs)
    return sql, [v for _, v in pairs]


class SqliteStore:
    """A connection to one workspace's SQLite file, with the queries the actors need."""

    def __init__(self, path: Path, *, readonly: bool = False) -> None:
        self.path = path
        self.readonly = readonly
        if readonly:
            uri = f"file:{path}?mode=ro"
            self.conn = sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=30)
            return
        # SQLite gives the -wal and -shm files the database file's mode: 0600 for all three.
        private_file(path)
        self.conn = sqlite3.connect(path, check_same_thread=False, timeout=30)
        try:
            self._open()
        except sqlite3.DatabaseError as exc:
            # A truncated or foreign file: said in one line. Closing rolls back whatever
            # this open had begun, so the file is left as it was.
            self.conn.close()
            where = f"workspace {path.parent.name}: {path.name}"
            if isinstance(exc, sqlite3.OperationalError):
                raise StoreError(f"{where} cannot be opened ({exc})") from exc
            raise StoreError(damaged_sqlite(where, exc, opening=True)) from exc

    def _open(self) -> None:
        self.conn.execute("PRAGMA journal_mode=WAL")
        # FULL: an acknowledged write survives power loss, not only a process crash.
        self.conn.execute("PRAGMA synchronous=FULL")
        fresh = not self._has_table("records")
        rebuild = self._migrate()
        self.conn.executescript(SCHEMA)
        if rebuild:
            self.conn.execute("INSERT INTO records_fts(records_fts) VALUES ('rebuild')")
        # Kept in the index's own settings: the merges `merge_index` does start at two.
        self.conn.execute("INSERT INTO records_fts(records_fts, rank) VALUES ('usermerge', 2)")
        if fresh:
            self.set_meta("text_format", str(TEXT_FORMAT))
        self.conn.commit()

    def _has_table(self, name: str) -> bool:
        row = self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,))
        return row.fetchone() is not None

    def _migrate(self) -> bool:
        """Bring a store written by an older version to this schema: records gain
        `context`, and the FTS index its second column. Returns whether the FTS index was
        dropped (the caller rebuilds it from the records once SCHEMA has made it again)."""
        if not self._has_table("records"):
            return False
        columns = {row[1] for row in self.conn.execute("PRAGMA table_info(records)")}
        if "context" not in columns:
            self.conn.execute("ALTER TABLE records ADD COLUMN context TEXT NOT NULL DEFAULT ''")
        fts = self.conn.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'records_fts'"
        ).fetchone()
        if fts is not None and "context" in fts[0]:
            return False
        # Dropped (or lost by a crash between this and the rebuild): made again and rebuilt.
        for statement in (
            "DROP TRIGGER IF EXISTS records_ai",
            "DROP TRIGGER IF EXISTS records_ad",
            "DROP TABLE IF EXISTS records_fts",
        ):
            self.conn.execute(statement)
        return True

    def meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        with self.conn:
            self.conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def text_format(self) -> int:
        """The format (`imprint.store.context.TEXT_FORMAT`) this store's index was built
        with: 1 for a store older than the setting."""
        try:
            value = self.meta("text_format")
        except sqlite3.OperationalError:  # a read-only view of a store not yet migrated
            return 1
        return int(value) if value and value.isdigit() else 1

    def close(self) -> None:
        self.conn.close()

    def merge_index(self, pages: int = MERGE_PAGES) -> bool:
        """One step of merging the BM25 index's segments, writing about `pages` pages at
        most: any two that share a level are merged (FTS5 waits for four on its own). The
        rankings are the same, with fewer segments to read. Returns whether it did any work;
        when it did not, nothing is left to merge until the next write."""
        with self.conn:
            before = self.conn.total_changes
            self.conn.execute(
                "INSERT INTO records_fts(records_fts, rank) VALUES ('merge', ?)", (pages,)
            )
            # FTS5's own measure: a step that merged anything changed two rows or more.
            return self.conn.total_changes - before >= 2

    def index_segments(self) -> int:
        """How many segments the BM25 index has now (each query reads every one)."""
        row = self.conn.execute("SELECT count(DISTINCT segid) FROM records_fts_idx").fetchone()
        return int(row[0])

    # -- reads ---------------------------------------------------------------------------

    def rare_words(self, words: Sequence[str]) -> list[str]:
        """The words worth an any-of-the-words query: all of them in a store of at most
        TERM_DOC_BUDGET records; in a larger one the rarest, while the records holding them
        add up to at most TERM_DOC_BUDGET (the rarest word the store holds always; words
        it does not hold cost nothing), in the query's order.

        Each word's records are counted only up to TERM_DOC_BUDGET + 1 (a LIMIT on the
        match), so the counting is bounded too; the index's own tokenizer applies. Words
        over the budget tie at that count; among them the longest goes first (function
        words such as "The" are short, and BM25 would weigh them least)."""
        return self._rare_words(words, self._last_rowid())[0]

    def _last_rowid(self) -> int:
        """The store's size, as the budget counts it (rowids only grow)."""
        return int(self.conn.execute("SELECT max(rowid) FROM records").fetchone()[0] or 0)

    def _rare_words(self, words: Sequence[str], last: int) -> tuple[list[str], bool]:
        """rare_words (`last`: `_last_rowid()`), and whether what it kept is over the budget
        (every word was)."""
        if last <= TERM_DOC_BUDGET or not words:
            return list(words), False
        counted: dict[str, int] = {}
        for word in dict.fromkeys(words):
            counted[word] = self.conn.execute(
                "SELECT count(*) FROM (SELECT rowid FROM records_fts WHERE records_fts MATCH ? "
                "LIMIT ?)",
                [f'"{word}"', TERM_DOC_BUDGET + 1],
            ).fetchone()[0]
        kept: set[str] = set()
        total = 0
        for word in sorted(counted, key=lambda w: (counted[w], -len(w))):
            if total and total + counted[word] > TERM_DOC_BUDGET:
                break
            kept.add(word)
            total += counted[word]
        return [w for w in words if w in kept], total > TERM_DOC_BUDGET

    def match(
        self, query: str, limit: int, filters: Filters, *, phrase_only: bool = False
    ) -> list[tuple[MemoryId, float]]:
        """BM25 ranking: records holding the exact phrase first, then any of the words. In a
        store of more than TERM_DOC_BUDGET records: any of its rarer words, and the phrase's
        matches (or those of a word over the budget) newest first, unscored (0.0)."""
        return self._match(query, limit, filters, phrase_only=phrase_only)[0]

    def match_and_phrase(
        self, query: str, limit: int, filters: Filters
    ) -> tuple[list[tuple[MemoryId, float]], list[tuple[MemoryId, float]]]:
        """`match(query)` and `match(query, phrase_only=True)` from one pass: the phrase's
        matches are the ranking's first block, so they are read once, not twice."""
        hits, phrased = self._match(query, limit, filters, phrase_only=False)
        return hits, hits[:phrased]

    def _match(
        self, query: str, limit: int, filters: Filters, *, phrase_only: bool
    ) -> tuple[list[tuple[MemoryId, float]], int]:
        """The ranking, and how many of its first hits hold the exact phrase."""
        where, params = _where(filters)
        extra = f" AND {where}" if where else ""
        joined = (
            "FROM records_fts JOIN records r ON r.rowid = records_fts.rowid "
            f"WHERE records_fts MATCH ?{extra}"
        )
        matched = f"SELECT r.id AS id, bm25(records_fts) AS rank {joined}"
        newest = f"SELECT r.id, 0.0 {joined}"
        # Unfiltered, the ranking is read from the FTS index alone and only the rows kept
        # are joined for their ids (joined first, every matching row was: a third of the
        # time when a common word matches most records).
        scored = (
            "SELECT records_fts.rowid, bm25(records_fts) AS rank FROM records_fts "
            "WHERE records_fts MATCH ?"
        )
        pool = matched if where else scored
        by_id = "SELECT r.id, f.rank FROM ({}) AS f CROSS JOIN records AS r ON r.rowid = f.rowid"
        last = self._last_rowid()
        large = last > TERM_DOC_BUDGET
        seen: dict[MemoryId, float] = {}
        phrased = -1  # the words' turn comes after the phrase's: the hits seen by then
        exprs = (fts_phrase(query),) if phrase_only else (fts_phrase(query), None)
        for expr in exprs:
            if expr is None:
                phrased = len(seen)
            if len(seen) >= limit:
                continue
            unscored = large
            if expr is None:  # counted only when the phrase left room
                words, unscored = self._rare_words(_WORD.findall(query), last)
                expr = fts_terms(" ".join(words)) if words else ""
            if not expr:
                continue
            if unscored:
                sql = f"{newest} ORDER BY records_fts.rowid DESC LIMIT ?"
                args = [expr, *params, limit]
            else:
                ranked = f"{pool} ORDER BY rank LIMIT ?"
                args = [expr, *params, limit]
                if large:  # a CamelCase word's parts, uncounted, may still be common
                    ranked = (
                        f"SELECT * FROM ({pool} ORDER BY records_fts.rowid DESC LIMIT ?) "
                        "ORDER BY rank LIMIT ?"
                    )
                    args = [expr, *params, TERM_DOC_BUDGET, limit]
                sql = ranked if where else by_id.format(ranked)
            for rid, rank in self.conn.execute(sql, args):
                if rid not in seen:
                    seen[MemoryId(rid)] = 0.0 - float(rank)  # not -0.0 for the phrase's
        if phrased < 0:
            phrased = len(seen)
        return list(seen.items())[:limit], min(phrased, limit)

    def fetch(self, ids: Iterable[str]) -> dict[MemoryId, Record]:
        wanted = list(dict.fromkeys(ids))
        out: dict[MemoryId, Record] = {}
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            marks = ",".join("?" * len(part))
            for row in self.conn.execute(f"{_SELECT} WHERE r.id IN ({marks})", part):
                rec = _row_to_record(row)
                out[rec.id] = rec
        return out

    def facts(self, subject: str, predicate: str, include_ended: bool, limit: int) -> list[Fact]:
        clauses, params = [], []
        if subject:
            clauses.append("subject = ? COLLATE NOCASE")
            params.append(subject)
        if predicate:
            clauses.append("predicate = ? COLLATE NOCASE")
            params.append(predicate)
        if not include_ended:
            clauses.append("ended IS NULL")
        where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
        rows = self.conn.execute(
            "SELECT id, subject, predicate, object, valid_from, ended, source FROM facts"
            f"{where} ORDER BY valid_from DESC, id LIMIT ?",
            [*params, limit],
        )
        keys = ("id", "subject", "predicate", "object", "valid_from", "ended", "source")
        return [Fact.model_validate(dict(zip(keys, row, strict=True))) for row in rows]

    def source_chunks(
        self, project: str, source: str, start: int, end: int
    ) -> tuple[list[Record], int]:
        """Chunks `start`..`end` (inclusive) of one source, and how many it has in all."""
        where = "r.source = ?" + (" AND r.project = ?" if project else "")
        params: list[Any] = [source, *([project] if project else [])]
        total = self.conn.execute(
            f"SELECT COUNT(*) FROM records r WHERE {where}", params
        ).fetchone()[0]
        rows = self.conn.execute(
            f"{_SELECT} WHERE {where} AND r.chunk_index BETWEEN ? AND ? "
            "ORDER BY r.project, r.chunk_index",
            [*params, start, end],
        )
        return [_row_to_record(row) for row in rows], int(total)

    def list_sources(
        self, project: str, lang: str, layer: str, limit: int
    ) -> tuple[list[dict[str, Any]], int]:
        where, params = _where(Filters(project=project, lang=lang, layer=layer))
        # Stored memories have no source: they are records, not something ingested.
        clause = " WHERE " + " AND ".join(c for c in (where, "r.source_type != 'memory'") if c)
        grouped = (
            "SELECT r.project, r.source, r.source_type, MAX(r.lang), MAX(r.layer), COUNT(*), "
            f"MAX(r.source_mtime) FROM records r{clause} GROUP BY r.project, r.source"
        )
        total = self.conn.execute(f"SELECT COUNT(*) FROM ({grouped})", params).fetchone()[0]
        keys = ("project", "source", "source_type", "lang", "layer", "chunks", "mtime")
        rows = self.conn.execute(
            f"{grouped} ORDER BY r.project, r.source LIMIT ?", [*params, limit]
        )
        return [dict(zip(keys, row, strict=True)) for row in rows], int(total)

    def source_root(self, project: str, source: str) -> str:
        row = self.conn.execute(
            "SELECT root FROM sources WHERE project = ? AND source = ?", (project, source)
        ).fetchone()
        return str(row[0]) if row else ""

    def projects(self) -> list[tuple[str, int]]:
        rows = self.conn.execute(
            "SELECT project, COUNT(*) FROM records GROUP BY project ORDER BY project"
        )
        return [(r[0], int(r[1])) for r in rows]

    def project_sources(
        self, projects: Sequence[str], limit: int
    ) -> dict[str, list[tuple[str, int]]]:
        """The first `limit` sources (by name) of each project named, with chunk counts:
        one grouped query, whatever the number of projects."""
        if not projects:
            return {}
        marks = ",".join("?" * len(projects))
        rows = self.conn.execute(
            "SELECT project, source, n FROM (SELECT project, source, COUNT(*) AS n, "
            "ROW_NUMBER() OVER (PARTITION BY project ORDER BY source) AS place "
            f"FROM records WHERE project IN ({marks}) AND source_type != 'memory' "
            "GROUP BY project, source) "
            "WHERE place <= ? ORDER BY project, source",
            [*projects, limit],
        )
        found: dict[str, list[tuple[str, int]]] = {p: [] for p in projects}
        for project, source, n in rows:
            found[project].append((source, int(n)))
        return found

    def topics(self, project: str, limit: int) -> list[tuple[str, int]]:
        where = " WHERE project = ?" if project else ""
        counts: dict[str, int] = {}
        for (raw,) in self.conn.execute(
            f"SELECT topics FROM records{where}", [project] * bool(project)
        ):
            for topic in json.loads(raw):
                counts[topic] = counts.get(topic, 0) + 1
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]

    def with_topic(self, topic: str, limit: int) -> list[Record]:
        rows = self.conn.execute(
            f"{_SELECT} WHERE EXISTS (SELECT 1 FROM json_each(r.topics) WHERE value = ?) "
            "ORDER BY r.project, r.source, r.chunk_index LIMIT ?",
            (topic, limit),
        )
        return [_row_to_record(row) for row in rows]

    def fact(self, fact_id: str) -> Fact | None:
        row = self.conn.execute(
            "SELECT id, subject, predicate, object, valid_from, ended, source FROM facts "
            "WHERE id = ?",
            (fact_id,),
        ).fetchone()
        keys = ("id", "subject", "predicate", "object", "valid_from", "ended", "source")
        return None if row is None else Fact.model_validate(dict(zip(keys, row, strict=True)))

    def ids(self) -> set[str]:
        return {row[0] for row in self.conn.execute("SELECT id FROM records")}

    def source_entry(self, project: str, source: str) -> SourceEntry | None:
        row = self.conn.execute(
            "SELECT project, source, source_type, mtime, sha, chunk_count, root, validators "
            "FROM sources "
            "WHERE project = ? AND source = ?",
            (project, source),
        ).fetchone()
        if row is None:
            return None
        keys = (
            "project",
            "source",
            "source_type",
            "mtime",
            "sha",
            "chunk_count",
            "root",
            "validators",
        )
        return SourceEntry.model_validate(dict(zip(keys, row, strict=True)))

    def source_ids(self, project: str, source: str) -> list[MemoryId]:
        rows = self.conn.execute(
            "SELECT id FROM records WHERE project = ? AND source = ? ORDER BY chunk_index",
            (project, source),
        )
        return [MemoryId(r[0]) for r in rows]

    def indexed_sources(self) -> list[tuple[str, str]]:
        """Every (project, source) with records that a context line can describe: files,
        URLs and content; not memories."""
        rows = self.conn.execute(
            "SELECT DISTINCT project, source FROM records WHERE source != '' "
            "AND source_type != 'memory' ORDER BY project, source"
        )
        return [(str(r[0]), str(r[1])) for r in rows]

    def source_records(self, project: str, source: str) -> list[Record]:
        rows = self.conn.execute(
            f"{_SELECT} WHERE r.project = ? AND r.source = ? ORDER BY r.chunk_index",
            (project, source),
        )
        return [_row_to_record(row) for row in rows]

    def record_counts(self, project: str, source_type: str) -> dict[str, int]:
        """Records held per source of a project (of one source type)."""
        rows = self.conn.execute(
            "SELECT source, COUNT(*) FROM records WHERE project = ? AND source_type = ? "
            "GROUP BY source",
            (project, source_type),
        )
        return {str(r[0]): int(r[1]) for r in rows}

    def sources_under(self, project: str, source_type: str) -> list[str]:
        rows = self.conn.execute(
            "SELECT source FROM sources WHERE project = ? AND source_type = ?",
            (project, source_type),
        )
        return [r[0] for r in rows]

    def counts(self) -> dict[str, Any]:
        per_project = {
            project: {"records": n, "sources": s}
            for project, n, s in self.conn.execute(
                "SELECT project, COUNT(*), COUNT(DISTINCT source) FROM records GROUP BY project"
            )
        }
        facts = self.conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(ended IS NULL), 0) FROM facts"
        ).fetchone()
        # An external-content FTS5 table counts its content table's rows; its docsize table
        # has one row per record really indexed.
        fts_rows = self.conn.execute("SELECT COUNT(*) FROM records_fts_docsize").fetchone()[0]
        pending = self.conn.execute("SELECT COUNT(*) FROM journal").fetchone()[0]
        last_write = {
            project: float(at or 0)
            for project, at in self.conn.execute(
                "SELECT project, MAX(created_at) FROM records GROUP BY project"
            )
        }
        quarantined = self.conn.execute("SELECT COUNT(*) FROM journal_quarantine").fetchone()[0]
        return {
            "project_last_write": last_write,
            "projects": per_project,
            "records": sum(p["records"] for p in per_project.values()),
            "fts_rows": fts_rows,
            "facts": facts[0],
            "facts_current": facts[1],
            "journal_pending": pending,
            "journal_quarantined": quarantined,
        }

    def fts_integrity(self) -> bool:
        try:
            # The check is an INSERT: committed at once, so the connection does not hold a
            # write transaction open (and every other writer out) until its next write.
            with self.conn:
                self.conn.execute("INSERT INTO records_fts(records_fts) VALUES ('integrity-check')")
        except sqlite3.DatabaseError:
            return False
        return True

    # -- writes (the WriterActor only) ---------------------------------------------------

    def journal_begin(self, batch: WriteBatch) -> int:
        with self.conn:
            cur = self.conn.execute(
                "INSERT INTO journal(payload, created_at) VALUES (?, ?)",
                (batch.model_dump_json(), time.time()),
            )
        assert cur.lastrowid is not None
        return cur.lastrowid

    def journal_pending(self) -> list[tuple[int, WriteBatch | str]]:
        """Entries oldest first: the batch, or why its payload cannot be read."""
        rows = self.conn.execute("SELECT seq, payload FROM journal ORDER BY seq").fetchall()
        out: list[tuple[int, WriteBatch | str]] = []
        for seq, payload in rows:
            try:
                out.append((seq, WriteBatch.model_validate_json(payload)))
            except ValueError as exc:
                out.append((seq, f"unreadable journal payload: {str(exc)[:200]}"))
        return out

    def journal_quarantine(self, seq: int, error: str) -> None:
        """Set a journal entry aside: kept whole for inspection, never replayed again."""
        with self.conn:
            self.conn.execute(
                "INSERT OR REPLACE INTO journal_quarantine "
                "SELECT seq, payload, created_at, ?, ? FROM journal WHERE seq = ?",
                (time.time(), error, seq),
            )
            self.conn.execute("DELETE FROM journal WHERE seq = ?", (seq,))

    def quarantined(self) -> list[tuple[int, float, str]]:
        """(seq, quarantined_at, error) of every entry set aside, oldest first."""
        rows = self.conn.execute(
            "SELECT seq, quarantined_at, error FROM journal_quarantine ORDER BY seq"
        )
        return [(int(r[0]), float(r[1]), str(r[2])) for r in rows]

    def apply(self, batch: WriteBatch, seq: int | None) -> None:
        """Apply a batch and retire its journal entry in one transaction."""
        with self.conn:
            drop = list(batch.delete_ids) + [r.id for r in batch.upserts]
            for start in range(0, len(drop), 500):
                part = drop[start : start + 500]
                marks = ",".join("?" * len(part))
                self.conn.execute(f"DELETE FROM records WHERE id IN ({marks})", part)
            self.conn.executemany(
                f"INSERT INTO records({', '.join(_COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(_COLUMNS))})",
                [_record_to_row(rec) for rec in batch.upserts],
            )
            for project, source in batch.drop_sources:
                self.conn.execute(
                    "DELETE FROM sources WHERE project = ? AND source = ?", (project, source)
                )
            self.conn.executemany(
                "INSERT OR REPLACE INTO sources VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        e.project,
                        e.source,
                        e.source_type,
                        e.mtime,
                        e.sha,
                        e.chunk_count,
                        e.root,
                        e.validators,
                        time.time(),
                    )
                    for e in batch.set_sources
                ],
            )
            self.conn.executemany(
                "INSERT OR REPLACE INTO facts VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (f.id, f.subject, f.predicate, f.object, f.valid_from, f.ended, f.source)
                    for f in batch.add_facts
                ],
            )
            self.conn.executemany(
                "UPDATE facts SET ended = ? WHERE id = ? AND ended IS NULL",
                [(ended, fid) for fid, ended in batch.end_facts],
            )
            if seq is not None:
                self.conn.execute("DELETE FROM journal WHERE seq = ?", (seq,))
