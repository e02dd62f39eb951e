"""The team store: one workspace's records, lexical index, vectors, facts, links and tombstones
in PostgreSQL, each write one transaction.

The local store keeps Chroma and SQLite apart and needs a journal to keep them agreeing after a
crash; here the record, its `tsvector` and its pgvector embedding are one row, so a write is
all there or not at all. Lexical ranking is PostgreSQL's `ts_rank_cd` over the same text FTS5
indexes (content and context, identifiers also split into their parts), the exact phrase first;
vectors are cosine, searched through HNSW (pgvector's iterative scan keeps a filtered search
from coming back short). A pool of connections serves any number of threads; any number of
processes may open the same database.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import psycopg
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from imprint.errors import StoreError
from imprint.store.embedder import Embedder
from imprint.store.lexical import TERM_DOC_BUDGET
from imprint.store.postgres.schema import migrate
from imprint.store.records import (
    Fact,
    Filters,
    Record,
    SourceEntry,
    SourceRow,
    SupersedeLink,
    WriteBatch,
    text_key,
)
from imprint.store.text import identifier_parts
from imprint.store.tombstones import memory_mark, source_mark
from imprint.types import MemoryId, WorkspaceName

__all__ = ["PostgresStore", "open_pool"]

_WORD = re.compile(r"\w+", re.UNICODE)
# Candidates an HNSW search walks at least (pgvector's ef_search); more for a larger limit.
EF_SEARCH = 100
# Chunk a long id list so one statement's array stays modest.
_ID_CHUNK = 1000
POOL_MAX = 8
# BM25's parameters, FTS5's defaults.
BM25_K1 = 1.2
BM25_B = 0.75


def open_pool(url: str, *, max_size: int = POOL_MAX) -> ConnectionPool:
    """A pool of autocommit-off connections; the schema migrated once before any is handed out.

    A connection the database dropped (a restart) is found by the pool's check before it is
    handed out and replaced, so callers see at most the one failed call in flight."""
    try:
        with psycopg.connect(url, connect_timeout=10) as conn:
            migrate(conn)
    except psycopg.OperationalError as exc:
        raise StoreError(f"database: cannot connect ({_one_line(exc)})") from exc
    pool = ConnectionPool(
        url,
        min_size=1,
        max_size=max_size,
        kwargs={"connect_timeout": 10},
        check=ConnectionPool.check_connection,
        open=True,
    )
    pool.wait(timeout=30)
    return pool


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300]


def lexical_text(record: Record) -> str:
    """What the lexical index holds: content and context, each identifier also in its parts
    (`readOnlyHint` -> read Only Hint), as FTS5's index and query building make them match."""
    text = f"{record.content}\n{record.context}"
    parts = [p for word in _WORD.findall(text) for p in identifier_parts(word) if p != word]
    return text + ("\n" + " ".join(parts) if parts else "")


def _query_text(query: str) -> str:
    """The query's words and their identifier parts, as one text to_tsvector splits."""
    words = _WORD.findall(query)
    return " ".join([*words, *(p for w in words for p in identifier_parts(w) if p != w)])


def _terms(query: str) -> str:
    """Any of the query's words (and their identifier parts) as a to_tsquery text. Words are
    runs of \\w, lower-cased, each in parentheses: no tsquery syntax survives from user text."""
    words: list[str] = []
    for word in _WORD.findall(query):
        words.append(word)
        words.extend(p for p in identifier_parts(word) if p != word)
    kept = [w.lower() for w in dict.fromkeys(words) if any(c.isalnum() for c in w)]
    return " | ".join(f"({w})" for w in kept)


def _filters(filters: Filters) -> tuple[str, list[Any]]:
    pairs = filters.pairs()
    # The column names come from the Filters model's own fields, never from input.
    return "".join(f" AND {k} = %s" for k, _ in pairs), [v for _, v in pairs]


def _vector(embedding: np.ndarray) -> str:
    return "[" + ",".join(repr(float(x)) for x in np.asarray(embedding, dtype=np.float32)) + "]"


class PostgresStore:
    """One workspace of a team database. Cheap to make: the pool is shared by every workspace."""

    def __init__(self, pool: ConnectionPool, workspace: WorkspaceName, embedder: Embedder) -> None:
        self.pool = pool
        self.name = workspace
        self.embedder = embedder

    # -- writes ---------------------------------------------------------------------------

    def write(
        self, batch: WriteBatch, embeddings: np.ndarray | None = None, *, actor: str = ""
    ) -> None:
        """Apply one batch in one transaction, with its audit row (who wrote it, when).

        The same semantics as the local writer's (`WriteBatch`): a replaced or dropped source
        loses the records not written again; a deleted record loses its supersede links; a
        deleted memory or a dropped source leaves a tombstone, a written one clears its own."""
        if embeddings is None or len(embeddings) != len(batch.upserts):
            embeddings = self.embedder.embed([r.indexed_text for r in batch.upserts])
        now = time.time()
        ws = self.name
        with self.pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            delete_ids = self._stale_ids(cur, batch)
            _tombstones(cur, ws, batch, delete_ids, now)
            cur.execute(
                "DELETE FROM records WHERE workspace = %s AND id = ANY(%s)", (ws, delete_ids)
            )
            cur.execute(
                "DELETE FROM supersedes WHERE workspace = %s AND (old_id = ANY(%s) "
                "OR new_id = ANY(%s))",
                (ws, delete_ids, delete_ids),
            )
            cur.executemany(
                "INSERT INTO records VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
                "to_tsvector('simple', %s), %s::vector, %s, %s) "
                "ON CONFLICT (workspace, id) DO UPDATE SET record = excluded.record, "
                "project = excluded.project, source = excluded.source, "
                "source_type = excluded.source_type, chunk_index = excluded.chunk_index, "
                "type = excluded.type, lang = excluded.lang, layer = excluded.layer, "
                "source_mtime = excluded.source_mtime, created_at = excluded.created_at, "
                "text_key = excluded.text_key, lexical = excluded.lexical, "
                "embedding = excluded.embedding, written_by = excluded.written_by, "
                "written_at = excluded.written_at",
                _record_rows(ws, batch, embeddings, actor, now),
            )
            _sources_and_facts(cur, ws, batch, actor, now)
            cur.executemany(
                "UPDATE facts SET ended = %s WHERE workspace = %s AND id = %s AND ended IS NULL",
                [(ended, ws, fid) for fid, ended in batch.end_facts],
            )
            cur.executemany(
                "INSERT INTO supersedes VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (workspace, old_id, new_id) DO UPDATE SET at = excluded.at",
                [(ws, link.old, link.new, link.at) for link in batch.supersede],
            )
            cur.execute(
                "INSERT INTO audit (workspace, actor, at, upserts, deletes, facts_added, "
                "facts_ended) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                (
                    ws,
                    actor,
                    now,
                    [r.id for r in batch.upserts],
                    delete_ids,
                    len(batch.add_facts),
                    len(batch.end_facts),
                ),
            )

    def _stale_ids(self, cur: psycopg.Cursor[Any], batch: WriteBatch) -> list[str]:
        """The batch's deletes plus every id a replaced or dropped source loses."""
        keep = {r.id for r in batch.upserts}
        stale: list[str] = list(batch.delete_ids)
        upserted = {(r.project, r.source) for r in batch.upserts}
        replaced = [(e.project, e.source) for e in batch.set_sources]
        for project, source in [s for s in replaced if s in upserted] + list(batch.drop_sources):
            rows = cur.execute(
                "SELECT id FROM records WHERE workspace = %s AND project = %s AND source = %s",
                (self.name, project, source),
            ).fetchall()
            stale.extend(str(r[0]) for r in rows if r[0] not in keep)
        return list(dict.fromkeys(stale))

    # -- reads ----------------------------------------------------------------------------

    def _all(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        with self.pool.connection() as conn:
            return conn.execute(sql.encode(), params).fetchall()

    def fetch(self, ids: Iterable[str]) -> dict[MemoryId, Record]:
        wanted = list(dict.fromkeys(ids))
        out: dict[MemoryId, Record] = {}
        for start in range(0, len(wanted), _ID_CHUNK):
            part = wanted[start : start + _ID_CHUNK]
            rows = self._all(
                "SELECT record FROM records WHERE workspace = %s AND id = ANY(%s)",
                (self.name, part),
            )
            for (doc,) in rows:
                rec = Record.model_validate(doc)
                out[rec.id] = rec
        return out

    def match(self, query: str, limit: int, filters: Filters) -> list[tuple[MemoryId, float]]:
        """Records holding the exact phrase first, then any of the words, by BM25.

        BM25 from PostgreSQL's own data: each query lexeme's document frequency counted
        through the GIN index, the workspace's record count and mean length, and each
        candidate's term frequencies read from its `tsvector` (a record's length is its count
        of distinct lexemes there, an approximation of FTS5's token count). `ts_rank_cd`
        alone has no IDF: on a generated 10k corpus its top-1 agreed with FTS5's 64.5% of the
        time."""
        terms = _terms(query)
        if not terms:
            return []
        where, params = _filters(filters)
        with self.pool.connection() as conn:
            stats = conn.execute(
                "WITH t AS (SELECT DISTINCT lexeme FROM unnest(to_tsvector('simple', %s))) "
                "SELECT t.lexeme, (SELECT count(*) FROM records WHERE workspace = %s "
                "AND lexical @@ quote_literal(t.lexeme)::tsquery) FROM t",
                (_query_text(query), self.name),
            ).fetchall()
            size = conn.execute(
                "SELECT count(*), coalesce(avg(length(lexical)), 1) FROM records "
                "WHERE workspace = %s",
                (self.name,),
            ).fetchone()
            total, mean = (int(size[0]), float(size[1])) if size else (0, 1.0)
            held = sorted(((str(lex), int(df)) for lex, df in stats if df), key=lambda t: t[1])
            if not held:
                return []
            # As the local store's bound (`lexical.TERM_DOC_BUDGET`): the rarest lexemes while
            # the records holding them add up to at most the budget, the rarest always.
            kept, seen = held[:1], held[0][1]
            for lex, df in held[1:]:
                if seen + df > TERM_DOC_BUDGET:
                    break
                kept.append((lex, df))
                seen += df
            held = kept
            lexemes = [lex for lex, _ in held]
            # BM25's (Robertson-Sparck Jones, floored at 0 as Lucene's +1) idf per lexeme.
            idf = [math.log(1 + (total - df + 0.5) / (df + 0.5)) for _, df in held]
            rows = conn.execute(
                (
                    "WITH q AS (SELECT * FROM unnest(%s::text[], %s::float8[]) AS q(lexeme, idf)), "
                    "c AS (SELECT id, lexical, length(lexical) AS dl, "
                    "lexical @@ phraseto_tsquery('simple', %s) AS phrase FROM records "
                    "WHERE workspace = %s AND lexical @@ (SELECT string_agg(quote_literal(l), "
                    f"' | ')::tsquery FROM unnest(%s::text[]) l){where}) "
                    "SELECT c.id, sum(q.idf * (cardinality(u.positions) * (%s + 1)) / "
                    "(cardinality(u.positions) + %s * (1 - %s + %s * c.dl / %s))) AS score, "
                    "bool_or(c.phrase) AS phrase "
                    "FROM c CROSS JOIN LATERAL unnest(c.lexical) u JOIN q ON q.lexeme = u.lexeme "
                    "GROUP BY c.id ORDER BY phrase DESC, score DESC, c.id LIMIT %s"
                ).encode(),
                [lexemes, idf, query, self.name, lexemes, *params,
                 BM25_K1, BM25_K1, BM25_B, BM25_B, mean, limit],
            ).fetchall()  # fmt: skip
        return [(MemoryId(r[0]), float(r[1])) for r in rows]

    def query(
        self, embedding: np.ndarray, limit: int, filters: Filters
    ) -> list[tuple[MemoryId, float]]:
        """Nearest records by cosine similarity (1 - distance), best first."""
        where, params = _filters(filters)
        with self.pool.connection() as conn, conn.transaction():
            conn.execute(f"SET LOCAL hnsw.ef_search = {max(EF_SEARCH, int(limit))}".encode())
            # A filter (the workspace always) would otherwise cut HNSW's candidates short.
            conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            rows = conn.execute(
                "SELECT id, distance FROM (SELECT id, embedding <=> %s::vector AS distance "
                f"FROM records WHERE workspace = %s{where} "
                "ORDER BY embedding <=> %s::vector LIMIT %s) hits "
                "ORDER BY distance, id".encode(),
                [_vector(embedding), self.name, *params, _vector(embedding), limit],
            ).fetchall()
        return [(MemoryId(r[0]), 1.0 - float(r[1])) for r in rows]

    def neighbors(self, record_id: str, k: int) -> list[tuple[MemoryId, float]]:
        """The k records nearest to one record, itself excluded; empty for an unknown id."""
        rows = self._all(
            "SELECT embedding::text FROM records WHERE workspace = %s AND id = %s",
            (self.name, record_id),
        )
        if not rows:
            return []
        vector = np.array([float(x) for x in rows[0][0].strip("[]").split(",")], np.float32)
        hits = self.query(vector, k + 1, Filters())
        return [(rid, score) for rid, score in hits if rid != record_id][:k]

    def supersede_links(self, ids: Iterable[str]) -> list[SupersedeLink]:
        wanted = list(dict.fromkeys(ids))
        rows = self._all(
            "SELECT old_id, new_id, at FROM supersedes WHERE workspace = %s "
            "AND (old_id = ANY(%s) OR new_id = ANY(%s)) ORDER BY at, old_id",
            (self.name, wanted, wanted),
        )
        return [SupersedeLink(old=r[0], new=r[1], at=r[2]) for r in rows]

    def same_text(self, project: str, key: str) -> MemoryId | None:
        rows = self._all(
            "SELECT id FROM records WHERE workspace = %s AND project = %s AND text_key = %s "
            "ORDER BY id LIMIT 1",
            (self.name, project, key),
        )
        return MemoryId(rows[0][0]) if rows else None

    def facts(self, subject: str, predicate: str, include_ended: bool, limit: int) -> list[Fact]:
        clauses, params = ["workspace = %s"], [str(self.name)]
        if subject:
            clauses.append("lower(subject) = lower(%s)")
            params.append(subject)
        if predicate:
            clauses.append("lower(predicate) = lower(%s)")
            params.append(predicate)
        if not include_ended:
            clauses.append("ended IS NULL")
        rows = self._all(
            "SELECT id, subject, predicate, object, valid_from, ended, source FROM facts "
            f"WHERE {' AND '.join(clauses)} ORDER BY valid_from DESC, id LIMIT %s",
            [*params, limit],
        )
        return [_fact(r) for r in rows]

    def fact(self, fact_id: str) -> Fact | None:
        rows = self._all(
            "SELECT id, subject, predicate, object, valid_from, ended, source FROM facts "
            "WHERE workspace = %s AND id = %s",
            (self.name, fact_id),
        )
        return _fact(rows[0]) if rows else None

    def source_chunks(
        self, project: str, source: str, start: int, end: int
    ) -> tuple[list[Record], int]:
        """Chunks `start`..`end` (inclusive) of one source, and how many it has in all."""
        where = "workspace = %s AND source = %s" + (" AND project = %s" if project else "")
        params: list[Any] = [self.name, source, *([project] if project else [])]
        total = self._all(f"SELECT count(*) FROM records WHERE {where}", params)[0][0]
        rows = self._all(
            f"SELECT record FROM records WHERE {where} AND chunk_index BETWEEN %s AND %s "
            "ORDER BY project, chunk_index",
            [*params, start, end],
        )
        return [Record.model_validate(r[0]) for r in rows], int(total)

    def list_sources(
        self, project: str, lang: str, layer: str, limit: int
    ) -> tuple[list[SourceRow], int]:
        where, params = _filters(Filters(project=project, lang=lang, layer=layer))
        # max(): an aggregate over the group, as SQLite's bare columns give one of its rows.
        grouped = (
            "SELECT project, source, max(source_type), max(lang), max(layer), count(*), "
            "max(source_mtime) FROM records "
            f"WHERE workspace = %s AND source_type != 'memory'{where} GROUP BY project, source"
        )
        total = self._all(f"SELECT count(*) FROM ({grouped}) g", [self.name, *params])[0][0]
        rows = self._all(
            f"{grouped} ORDER BY project, source LIMIT %s", [self.name, *params, limit]
        )
        keys = ("project", "source", "source_type", "lang", "layer", "chunks", "mtime")
        found = [SourceRow.model_validate(dict(zip(keys, r, strict=True))) for r in rows]
        return found, int(total)

    def source_entry(self, project: str, source: str) -> SourceEntry | None:
        rows = self._all(
            "SELECT project, source, source_type, mtime, sha, chunk_count, root, validators "
            "FROM sources WHERE workspace = %s AND project = %s AND source = %s",
            (self.name, project, source),
        )
        if not rows:
            return None
        keys = ("project", "source", "source_type", "mtime", "sha", "chunk_count", "root",
                "validators")  # fmt: skip
        return SourceEntry.model_validate(dict(zip(keys, rows[0], strict=True)))

    def projects(self) -> list[tuple[str, int]]:
        rows = self._all(
            "SELECT project, count(*) FROM records WHERE workspace = %s "
            "GROUP BY project ORDER BY project",
            (self.name,),
        )
        return [(str(r[0]), int(r[1])) for r in rows]

    def tombstones(self) -> dict[str, float]:
        rows = self._all("SELECT key, at FROM tombstones WHERE workspace = %s", (self.name,))
        return {str(r[0]): float(r[1]) for r in rows}

    def audit(self, limit: int = 100) -> list[dict[str, Any]]:
        """The newest writes to this workspace, newest first: who, when, which ids."""
        rows = self._all(
            "SELECT seq, actor, at, upserts, deletes, facts_added, facts_ended FROM audit "
            "WHERE workspace = %s ORDER BY seq DESC LIMIT %s",
            (self.name, limit),
        )
        keys = ("seq", "actor", "at", "upserts", "deletes", "facts_added", "facts_ended")
        return [dict(zip(keys, r, strict=True)) for r in rows]

    def close(self) -> None:
        """Nothing of its own: the pool is its opener's."""


def _fact(row: Sequence[Any]) -> Fact:
    keys = ("id", "subject", "predicate", "object", "valid_from", "ended", "source")
    return Fact.model_validate(dict(zip(keys, row, strict=True)))


def _tombstones(
    cur: psycopg.Cursor[Any], ws: str, batch: WriteBatch, delete_ids: list[str], now: float
) -> None:
    """A deleted memory or a dropped source leaves a tombstone; a written one clears its own."""
    marks = [
        memory_mark(str(row[0]))
        for row in cur.execute(
            "SELECT id FROM records WHERE workspace = %s AND source_type = 'memory' "
            "AND id = ANY(%s)",
            (ws, delete_ids),
        ).fetchall()
    ]
    marks.extend(source_mark(p, s) for p, s in batch.drop_sources)
    cur.executemany(
        "INSERT INTO tombstones VALUES (%s, %s, %s) "
        "ON CONFLICT (workspace, key) DO UPDATE SET at = excluded.at",
        [(ws, m, now) for m in marks],
    )
    back = [memory_mark(r.id) for r in batch.upserts if r.source_type == "memory"]
    back.extend(source_mark(e.project, e.source) for e in batch.set_sources)
    cur.execute("DELETE FROM tombstones WHERE workspace = %s AND key = ANY(%s)", (ws, back))


def _record_rows(
    ws: str, batch: WriteBatch, embeddings: np.ndarray, actor: str, now: float
) -> list[tuple[Any, ...]]:
    """The `records` rows of a batch's upserts, in the table's column order."""
    return [
        (ws, r.id, Jsonb(r.model_dump(mode="json")), r.project, r.source, r.source_type,
         r.chunk_index, r.type, r.lang, r.layer, r.source_mtime, r.created_at,
         text_key(r.content) if r.source_type == "memory" else None, lexical_text(r),
         _vector(e), actor, now)
        for r, e in zip(batch.upserts, embeddings, strict=True)
    ]  # fmt: skip


def _sources_and_facts(
    cur: psycopg.Cursor[Any], ws: str, batch: WriteBatch, actor: str, now: float
) -> None:
    """A dropped source's entry goes; the batch's sources and new facts are written."""
    for project, source in batch.drop_sources:
        cur.execute(
            "DELETE FROM sources WHERE workspace = %s AND project = %s AND source = %s",
            (ws, project, source),
        )
    cur.executemany(
        "INSERT INTO sources VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
        "ON CONFLICT (workspace, project, source) DO UPDATE SET "
        "source_type = excluded.source_type, mtime = excluded.mtime, sha = excluded.sha, "
        "chunk_count = excluded.chunk_count, root = excluded.root, "
        "validators = excluded.validators, ingested_at = excluded.ingested_at",
        [
            (ws, e.project, e.source, e.source_type, e.mtime, e.sha, e.chunk_count,
             e.root, e.validators, now)
            for e in batch.set_sources
        ],
    )  # fmt: skip
    cur.executemany(
        "INSERT INTO facts VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) "
        "ON CONFLICT (workspace, id) DO UPDATE SET subject = excluded.subject, "
        "predicate = excluded.predicate, object = excluded.object, "
        "valid_from = excluded.valid_from, ended = excluded.ended, "
        "source = excluded.source, written_by = excluded.written_by",
        [
            (ws, f.id, f.subject, f.predicate, f.object, f.valid_from, f.ended,
             f.source, actor)
            for f in batch.add_facts
        ],
    )  # fmt: skip
