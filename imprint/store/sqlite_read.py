"""A read-only connection to one workspace's SQLite file: the queries the readers answer.

Each reader actor opens its own (WAL mode lets them read while the writer commits); it has
no write methods. The writer's store (`imprint.store.sqlite_write.SqliteWriter`) is this
plus the writes.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from imprint.store import lexical
from imprint.store.records import Fact, Filters, Record, SourceEntry, SourceRow, SupersedeLink
from imprint.store.schema import SELECT, filter_clause, row_to_record, select_for
from imprint.types import MemoryId

__all__ = ["SqliteReader"]


class SqliteReader:
    """A read-only connection to one workspace's SQLite file, with the queries readers need."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conn = self._connect(path)
        self._select = ""

    @property
    def select(self) -> str:
        """The records' `SELECT` for this store: asked again until it has every column (a
        writer migrates an older store while this reader reads it)."""
        if self._select != SELECT:
            self._select = select_for(self.conn)
        return self._select

    def _connect(self, path: Path) -> sqlite3.Connection:
        uri = f"file:{path}?mode=ro"
        return sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=30)

    def meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

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

    def index_segments(self) -> int:
        """How many segments the BM25 index has now (each query reads every one)."""
        row = self.conn.execute("SELECT count(DISTINCT segid) FROM records_fts_idx").fetchone()
        return int(row[0])

    def rare_words(self, words: Sequence[str]) -> list[str]:
        """The words worth an any-of-the-words query: all of them in a store of at most
        TERM_DOC_BUDGET records; in a larger one the rarest, while the records holding them
        add up to at most TERM_DOC_BUDGET (the rarest word the store holds always; words
        it does not hold cost nothing), in the query's order.

        Each word's records are counted only up to TERM_DOC_BUDGET + 1 (a LIMIT on the
        match), so the counting is bounded too; the index's own tokenizer applies. Words
        over the budget tie at that count; among them the longest goes first (function
        words such as "The" are short, and BM25 would weigh them least)."""
        return lexical.rare_words(self.conn, words, lexical.last_rowid(self.conn))[0]

    def match(
        self, query: str, limit: int, filters: Filters, *, phrase_only: bool = False
    ) -> list[tuple[MemoryId, float]]:
        """BM25 ranking: records holding the exact phrase first, then any of the words. In a
        store of more than TERM_DOC_BUDGET records: any of its rarer words, and the phrase's
        matches (or those of a word over the budget) newest first, unscored (0.0)."""
        return lexical.bm25_ranking(self.conn, query, limit, filters, phrase_only=phrase_only)[0]

    def match_and_phrase(
        self, query: str, limit: int, filters: Filters
    ) -> tuple[list[tuple[MemoryId, float]], list[tuple[MemoryId, float]]]:
        """`match(query)` and `match(query, phrase_only=True)` from one pass: the phrase's
        matches are the ranking's first block, so they are read once, not twice."""
        hits, phrased = lexical.bm25_ranking(self.conn, query, limit, filters, phrase_only=False)
        return hits, hits[:phrased]

    def fetch(self, ids: Iterable[str]) -> dict[MemoryId, Record]:
        wanted = list(dict.fromkeys(ids))
        out: dict[MemoryId, Record] = {}
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            marks = ",".join("?" * len(part))
            for row in self.conn.execute(f"{self.select} WHERE r.id IN ({marks})", part):
                rec = row_to_record(row)
                out[rec.id] = rec
        return out

    def supersede_links(self, ids: Iterable[str]) -> list[SupersedeLink]:
        """The supersede links these records are part of, as the older or the newer memory,
        oldest link first."""
        wanted = list(dict.fromkeys(ids))
        out: dict[tuple[str, str], SupersedeLink] = {}
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            marks = ",".join("?" * len(part))
            rows = self.conn.execute(
                "SELECT old_id, new_id, at FROM supersedes "
                f"WHERE old_id IN ({marks}) OR new_id IN ({marks})",
                part + part,
            )
            for old, new, at in rows:
                out[(old, new)] = SupersedeLink(old=old, new=new, at=at)
        return sorted(out.values(), key=lambda link: (link.at, link.old))

    def same_text(self, project: str, key: str) -> MemoryId | None:
        """The memory of this project whose text has this key (`records.text_key`), if any."""
        row = self.conn.execute(
            "SELECT id FROM memory_keys WHERE project = ? AND text_key = ? ORDER BY id LIMIT 1",
            (project, key),
        ).fetchone()
        return None if row is None else MemoryId(row[0])

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
            f"{self.select} WHERE {where} AND r.chunk_index BETWEEN ? AND ? "
            "ORDER BY r.project, r.chunk_index",
            [*params, start, end],
        )
        return [row_to_record(row) for row in rows], int(total)

    def list_sources(
        self, project: str, lang: str, layer: str, limit: int
    ) -> tuple[list[SourceRow], int]:
        where, params = filter_clause(Filters(project=project, lang=lang, layer=layer))
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
        found = [SourceRow.model_validate(dict(zip(keys, row, strict=True))) for row in rows]
        return found, int(total)

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

    def newest(
        self, project: str, types: Sequence[str], kinds: Sequence[str], limit: int
    ) -> list[Record]:
        """The newest records of one project whose type (or, given kinds, kind) is one of
        those named, newest first (a session's briefing)."""
        clauses, params = ["r.project = ?"], [project]
        for column, values in (("type", types), ("kind", kinds)):
            if values:
                clauses.append(f"r.{column} IN ({','.join('?' * len(values))})")
                params.extend(values)
        rows = self.conn.execute(
            f"{self.select} WHERE {' AND '.join(clauses)} ORDER BY r.created_at DESC, r.id LIMIT ?",
            [*params, limit],
        )
        return [row_to_record(row) for row in rows]

    def project_memories(
        self, project: str, offset: int, limit: int, source: str = ""
    ) -> tuple[list[Record], int]:
        """One page of a project's memories (stored ones and session summaries, superseded
        ones too), newest first, and how many the project has in all (its Memory page);
        with `source`, only those of that source or of one of its parts (`source#n`)."""
        where = "r.project = ? AND r.source_type = 'memory'"
        params: list[Any] = [project]
        if source:
            # Not LIKE: `_` and `%` in a source are its own characters.
            where += " AND (r.source = ? OR substr(r.source, 1, ?) = ?)"
            params += [source, len(source) + 1, f"{source}#"]
        rows = self.conn.execute(
            f"{self.select} WHERE {where} ORDER BY r.created_at DESC, r.id LIMIT ? OFFSET ?",
            [*params, limit, offset],
        )
        found = [row_to_record(row) for row in rows]
        (total,) = self.conn.execute(
            "SELECT COUNT(*) FROM records r WHERE " + where, params
        ).fetchone()
        return found, int(total)

    def project_roots(self) -> list[tuple[str, str]]:
        """Each (project, folder) that a folder's ingest registered, once."""
        rows = self.conn.execute(
            "SELECT DISTINCT project, root FROM sources WHERE root != '' ORDER BY project, root"
        )
        return [(str(r[0]), str(r[1])) for r in rows]

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
            f"{self.select} WHERE EXISTS (SELECT 1 FROM json_each(r.topics) WHERE value = ?) "
            "ORDER BY r.project, r.source, r.chunk_index LIMIT ?",
            (topic, limit),
        )
        return [row_to_record(row) for row in rows]

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

    def ids_after(self, rowid: int, limit: int) -> list[tuple[int, str]]:
        """(rowid, id) of the next `limit` records after `rowid`, in rowid order: a walk over
        every record that holds a page at a time, not all their ids."""
        return self.conn.execute(
            "SELECT rowid, id FROM records WHERE rowid > ? ORDER BY rowid LIMIT ?", (rowid, limit)
        ).fetchall()

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
            f"{self.select} WHERE r.project = ? AND r.source = ? ORDER BY r.chunk_index",
            (project, source),
        )
        return [row_to_record(row) for row in rows]

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
