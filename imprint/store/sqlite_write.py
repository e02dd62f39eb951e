"""The writer's connection to one workspace's SQLite file: the reads, and the writes (the
journal, applying a batch, merging the BM25 index). Only the WriterActor holds one."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from imprint._fs import private_file
from imprint.errors import StoreError, damaged_sqlite
from imprint.store.records import WriteBatch
from imprint.store.schema import COLUMNS, memory_key_rows, prepare, record_to_row
from imprint.store.sqlite_read import SqliteReader
from imprint.store.tombstones import memory_mark, source_mark

__all__ = ["MERGE_PAGES", "SqliteWriter"]

# The BM25 index is a stack of segments: every write transaction adds one, and FTS5 merges
# them only once four share a level, so an ingested store keeps many (17 for the corpus's
# 1,586 records) and every query reads each word in each of them: BM25 took 3.4 ms for four
# queries there, 2.5 ms with one segment (the same rankings). The writer merges segments as
# soon as two share a level (`merge_index`), in steps of about this many pages written.
MERGE_PAGES = 256


class SqliteWriter(SqliteReader):
    """A read-write connection: opening it brings the file to this schema (`schema.prepare`)."""

    def _connect(self, path: Path) -> sqlite3.Connection:
        # SQLite gives the -wal and -shm files the database file's mode: 0600 for all three.
        private_file(path)
        conn = sqlite3.connect(path, check_same_thread=False, timeout=30)
        try:
            prepare(conn)
        except sqlite3.DatabaseError as exc:
            # A truncated or foreign file: said in one line. Closing rolls back whatever
            # this open had begun, so the file is left as it was.
            conn.close()
            where = f"workspace {path.parent.name}: {path.name}"
            if isinstance(exc, sqlite3.OperationalError):
                raise StoreError(f"{where} cannot be opened ({exc})") from exc
            raise StoreError(damaged_sqlite(where, exc, opening=True)) from exc
        return conn

    def set_meta(self, key: str, value: str) -> None:
        with self.conn:
            self.conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

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

    def fts_integrity(self) -> bool:
        try:
            # The check is an INSERT: committed at once, so the connection does not hold a
            # write transaction open (and every other writer out) until its next write.
            with self.conn:
                self.conn.execute("INSERT INTO records_fts(records_fts) VALUES ('integrity-check')")
        except sqlite3.DatabaseError:
            return False
        return True

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
            self._mark_tombstones(batch)
            drop = list(batch.delete_ids) + [r.id for r in batch.upserts]
            for start in range(0, len(drop), 500):
                part = drop[start : start + 500]
                marks = ",".join("?" * len(part))
                self.conn.execute(f"DELETE FROM records WHERE id IN ({marks})", part)
                self.conn.execute(f"DELETE FROM memory_keys WHERE id IN ({marks})", part)
            # Only a deleted record loses its links: an upsert rewrites a record in place.
            gone = list(batch.delete_ids)
            for start in range(0, len(gone), 500):
                part = gone[start : start + 500]
                marks = ",".join("?" * len(part))
                self.conn.execute(
                    f"DELETE FROM supersedes WHERE old_id IN ({marks}) OR new_id IN ({marks})",
                    part + part,
                )
            self.conn.executemany(
                f"INSERT INTO records({', '.join(COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(COLUMNS))})",
                [record_to_row(rec) for rec in batch.upserts],
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
            self.conn.executemany(
                "INSERT OR REPLACE INTO memory_keys VALUES (?, ?, ?)",
                memory_key_rows(batch.upserts),
            )
            self.conn.executemany(
                "INSERT OR REPLACE INTO supersedes VALUES (?, ?, ?)",
                [(link.old, link.new, link.at) for link in batch.supersede],
            )
            self.conn.executemany(
                "DELETE FROM supersedes WHERE old_id = ?", [(rid,) for rid in batch.restore]
            )
            self.conn.executemany(
                "INSERT OR REPLACE INTO sync_taken VALUES (?, ?)", batch.sync_taken
            )
            if seq is not None:
                self.conn.execute("DELETE FROM journal WHERE seq = ?", (seq,))

    def _mark_tombstones(self, batch: WriteBatch) -> None:
        """Inside `apply`'s transaction, before its deletes: a tombstone for each memory and
        source the batch deletes, and none left for what it writes again. Chunks a source's
        new ingest replaces are not marked: the source itself lives on."""
        now = time.time()
        gone = list(batch.delete_ids)
        marks: list[str] = []
        for start in range(0, len(gone), 500):
            part = gone[start : start + 500]
            rows = self.conn.execute(
                f"SELECT id FROM records WHERE source_type = 'memory' "
                f"AND id IN ({','.join('?' * len(part))})",
                part,
            )
            marks.extend(memory_mark(str(row[0])) for row in rows)
        marks.extend(source_mark(p, s) for p, s in batch.drop_sources)
        self.conn.executemany(
            "INSERT OR REPLACE INTO tombstones VALUES (?, ?)", [(m, now) for m in marks]
        )
        back = [memory_mark(r.id) for r in batch.upserts if r.source_type == "memory"]
        back.extend(source_mark(e.project, e.source) for e in batch.set_sources)
        self.conn.executemany("DELETE FROM tombstones WHERE key = ?", [(m,) for m in back])
