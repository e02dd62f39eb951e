"""The deep check and the repair of one workspace's two indexes.

`deep_check` compares SQLite (records, FTS5, journal) with Chroma record by record: ids,
and content hashes (Chroma keeps each record's `content_sha` in its metadata; SQLite's
content is hashed again against its own column). It also searches Chroma once, because a
damaged HNSW segment is only found when it is read.

`repair` rebuilds the side that disagrees from the other. SQLite holds the text, so it is
the side vectors are rebuilt from: missing, stale or unhashed vectors are re-embedded, and
an unreadable vector segment is rebuilt whole. Chroma keeps no text, so rows lost from
SQLite cannot come back from it: their vectors are removed and their sources named, to be
ingested again. The FTS5 index is rebuilt from the records table. Only the writer calls it.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict

from imprint.store.embedder import Embedder
from imprint.store.records import Filters, content_sha
from imprint.store.sqlite_read import SqliteReader
from imprint.store.sqlite_write import SqliteWriter
from imprint.store.vectors import VectorIndex

__all__ = ["IndexReport", "deep_check", "reembed", "repair"]

EMBED_BATCH = 256
SHOWN = 5  # ids named in a report line


class IndexReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    records: int
    vectors: int
    only_in_lexical: tuple[str, ...]
    only_in_vectors: tuple[str, ...]
    hash_mismatch: tuple[str, ...]  # both sides hold the id; Chroma's hash is another text's
    unhashed: tuple[str, ...]  # vectors written before Chroma kept content hashes
    bad_content: tuple[str, ...]  # SQLite rows whose text no longer matches their hash
    vector_error: str  # "" or one line: Chroma could not be read or searched
    fts_ok: bool
    journal_pending: int
    journal_quarantined: int

    @property
    def agree(self) -> bool:
        return not (
            self.only_in_lexical
            or self.only_in_vectors
            or self.hash_mismatch
            or self.bad_content
            or self.vector_error
            or not self.fts_ok
            or self.journal_pending
        )

    def lines(self) -> list[str]:
        """One line per finding; empty when the indexes agree."""
        out = []

        def named(ids: tuple[str, ...]) -> str:
            more = f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else ""
            return ", ".join(ids[:SHOWN]) + more

        if self.vector_error:
            out.append(f"vector index unreadable: {self.vector_error}")
        if self.only_in_lexical:
            out.append(
                f"{len(self.only_in_lexical)} records have no vector: {named(self.only_in_lexical)}"
            )
        if self.only_in_vectors:
            out.append(
                f"{len(self.only_in_vectors)} vectors have no record: {named(self.only_in_vectors)}"
            )
        if self.hash_mismatch:
            out.append(
                f"{len(self.hash_mismatch)} vectors belong to another text than their record: "
                f"{named(self.hash_mismatch)}"
            )
        if self.bad_content:
            out.append(
                f"{len(self.bad_content)} records no longer match their content hash: "
                f"{named(self.bad_content)}"
            )
        if not self.fts_ok:
            out.append("the full-text index (FTS5) is damaged")
        if self.journal_pending:
            out.append(f"{self.journal_pending} journaled writes are unfinished")
        return out


def _sqlite_hashes(sqlite: SqliteReader) -> tuple[dict[str, str], list[str]]:
    """id -> stored content_sha, and the ids whose text no longer hashes to it."""
    hashes: dict[str, str] = {}
    bad: list[str] = []
    for rid, content, sha in sqlite.conn.execute("SELECT id, content, content_sha FROM records"):
        hashes[rid] = sha or content_sha(content)
        if sha and content_sha(content) != sha:
            bad.append(rid)
    return hashes, sorted(bad)


def _fts_covers(sqlite: SqliteReader) -> bool:
    """Whether the FTS5 index holds exactly the records table's rows. An external-content
    table counts (and integrity-checks) through its content table, so the comparison is
    with its own per-row table: records_fts_docsize has one row per indexed record."""
    indexed = {row[0] for row in sqlite.conn.execute("SELECT id FROM records_fts_docsize")}
    rows = {row[0] for row in sqlite.conn.execute("SELECT rowid FROM records")}
    return indexed == rows


HASH_PAGE = 5000  # vectors' hashes read per call


def _vector_hashes(vectors: VectorIndex) -> dict[str, str]:
    """Each vector's content hash. Read by id, a page at a time: Chroma answers a page at
    an offset in time growing with the offset (quadratic over a large store), and all the
    metadata of a million records in one answer would not fit comfortably in memory."""
    out: dict[str, str] = {}
    ids = sorted(vectors.ids())
    for start in range(0, len(ids), HASH_PAGE):
        page = vectors.collection.get(ids=ids[start : start + HASH_PAGE], include=["metadatas"])
        for rid, meta in zip(page["ids"], page["metadatas"] or [], strict=False):
            out[rid] = str((meta or {}).get("content_sha") or "")
    return out


def _probe(vectors: VectorIndex, dim: int) -> None:
    """One nearest-neighbour search: raises when the vector segment cannot be read."""
    if vectors.count() == 0:
        return
    vectors.query(np.ones(dim, dtype=np.float32) / np.sqrt(dim), 1, Filters())


def deep_check(sqlite: SqliteWriter, vectors: VectorIndex, dim: int) -> IndexReport:
    lexical, bad = _sqlite_hashes(sqlite)
    vector_error = ""
    try:
        hashed = _vector_hashes(vectors)
        _probe(vectors, dim)
    except Exception as exc:  # any failure of Chroma's reads is the finding itself
        hashed = {}
        vector_error = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
    both = lexical.keys() & hashed.keys()
    counts = sqlite.counts()
    return IndexReport(
        records=len(lexical),
        vectors=len(hashed),
        only_in_lexical=tuple(sorted(lexical.keys() - hashed.keys())) if not vector_error else (),
        only_in_vectors=tuple(sorted(hashed.keys() - lexical.keys())),
        hash_mismatch=tuple(sorted(i for i in both if hashed[i] and hashed[i] != lexical[i])),
        unhashed=tuple(sorted(i for i in both if not hashed[i])),
        bad_content=tuple(bad),
        vector_error=vector_error,
        fts_ok=sqlite.fts_integrity() and _fts_covers(sqlite),
        journal_pending=counts["journal_pending"],
        journal_quarantined=counts["journal_quarantined"],
    )


def reembed(sqlite: SqliteReader, vectors: VectorIndex, embedder: Embedder, ids: list[str]) -> int:
    """Embed these records' text again into the vector index (ids no longer in SQLite are
    skipped); how many were."""
    done = 0
    for start in range(0, len(ids), EMBED_BATCH):
        records = list(sqlite.fetch(ids[start : start + EMBED_BATCH]).values())
        if records:
            vectors.upsert(records, embedder.embed([r.indexed_text for r in records]))
            done += len(records)
    return done


def repair(
    sqlite: SqliteWriter, vectors: VectorIndex, embedder: Embedder, report: IndexReport
) -> tuple[VectorIndex, list[str]]:
    """Make the indexes agree again; the (possibly new) vector index and what was done."""
    done: list[str] = []
    if report.vector_error:
        name = vectors.collection.name
        vectors.client.delete_collection(name)
        vectors = vectors.reopened()
        count = reembed(sqlite, vectors, embedder, sorted(sqlite.ids()))
        done.append(f"rebuilt the vector index from the lexical one: {count} records re-embedded")
    else:
        stale = sorted({*report.only_in_lexical, *report.hash_mismatch, *report.unhashed})
        if stale:
            count = reembed(sqlite, vectors, embedder, stale)
            done.append(
                f"re-embedded {count} records into the vector index "
                f"({len(report.only_in_lexical)} missing, {len(report.hash_mismatch)} stale, "
                f"{len(report.unhashed)} without a content hash)"
            )
        if report.only_in_vectors:
            orphans = list(report.only_in_vectors)
            got = vectors.collection.get(ids=orphans, include=["metadatas"])
            metas = [m or {} for m in got["metadatas"] or []]
            sources = sorted({str(m["source"]) for m in metas if m.get("source")})
            memories = sum(1 for m in metas if not m.get("source"))
            vectors.delete(orphans)
            lost = []
            if memories:
                lost.append(f"{memories} stored memories cannot come back")
            if sources:
                lost.append(f"ingest again: {', '.join(sources[:10])}")
            done.append(
                f"removed {len(orphans)} vectors whose records are gone from SQLite (Chroma "
                f"keeps no text to restore them from); {'; '.join(lost)}"
            )
    if not report.fts_ok:
        sqlite.conn.execute("INSERT INTO records_fts(records_fts) VALUES ('rebuild')")
        sqlite.conn.commit()
        done.append("rebuilt the full-text index (FTS5) from the records table")
    if report.bad_content:
        done.append(
            f"{len(report.bad_content)} records no longer match their content hash: left as "
            "they are (no other copy of their text exists); delete or ingest them again"
        )
    return vectors, done
