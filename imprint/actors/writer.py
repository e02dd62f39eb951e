"""WriterActor: the only writer of a workspace's Chroma collection, FTS5 index and facts.

A write is journaled first, then applied to Chroma, then to SQLite together with the removal
of its journal entry (one transaction). A write is acknowledged only after both hold it. A
crash anywhere leaves the journal entry, and `recover` re-applies it: Chroma's upsert and
delete are idempotent and the SQLite step is one transaction, so both indexes end equal.
"""

from __future__ import annotations

import errno
import sqlite3
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pykka
from pydantic import BaseModel, ConfigDict
from pykka.typing import proxy_method

from imprint._faults import delay, failpoint
from imprint.actors._trace import new_request_id, traced
from imprint.actors.write_messages import (
    Check,
    MergeIndex,
    Reindex,
    Repair,
    SourceState,
    Write,
)
from imprint.errors import StoreError
from imprint.logs import get_logger
from imprint.store.context import TEXT_FORMAT, chunk_contexts
from imprint.store.embedder import DIMENSIONS, Embedder
from imprint.store.integrity import deep_check, repair
from imprint.store.records import Record
from imprint.store.sqlite import SourceEntry, WriteBatch
from imprint.store.workspace import WorkspaceStore
from imprint.types import RecallId

__all__ = ["WriteAck", "Writer", "WriterActor", "WriterProxy"]

log = get_logger("imprint.writer")

# Records a re-index step writes at most (more when one source has more): a step holds the
# writer for about this many embeddings.
REINDEX_BATCH = 64


def _disk_full(exc: Exception) -> bool:
    """ENOSPC from Chroma or the OS, or SQLite's SQLITE_FULL ("database or disk is full")."""
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return True
    if isinstance(exc, sqlite3.OperationalError):
        return "full" in str(exc)
    return "No space left on device" in str(exc)


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())[:200] or type(exc).__name__


class WriteAck(BaseModel):
    model_config = ConfigDict(frozen=True)

    upserted: int
    deleted: int


@dataclass
class Reindexing:
    """A re-index in progress: the sources still to look at, of how many."""

    sources: deque[tuple[str, str]]
    total: int
    done: int = 0
    records: int = 0
    started: float = field(default_factory=time.monotonic)


class Writer:
    """The write logic, testable without threads."""

    actor_name = "Writer"

    def __init__(self, store: WorkspaceStore, embedder: Embedder) -> None:
        self.store = store
        self.embedder = embedder
        self.actor_name = f"Writer[{store.name}]"
        self._needs_recovery = False
        self._reindex: Reindexing | None = None
        # The plain check's last answer, and the state of the store it was taken in.
        self._checked: tuple[tuple[int, int, int], dict[str, Any]] | None = None

    def recover(self) -> int:
        """Finish every write a crash or a failure interrupted; returns how many were replayed.

        An entry that fails again here has now failed twice (its first attempt, and this
        replay): it is set aside in the quarantine table, logged, and counted by `status`,
        so one bad write cannot block every later call to the workspace."""
        started = time.monotonic()
        self._checked = None
        pending = self.store.sqlite.journal_pending()
        replayed = 0
        for seq, batch in pending:
            if isinstance(batch, str):
                self._quarantine(seq, batch, 0, 0)
                continue
            log.warning(
                "writer.recover",
                workspace=self.store.name,
                seq=seq,
                upserts=len(batch.upserts),
                deletes=len(batch.delete_ids),
            )
            try:
                self._apply(batch, seq, None)
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"[:500]
                self._quarantine(seq, error, len(batch.upserts), len(batch.delete_ids))
                continue
            replayed += 1
        self._needs_recovery = False
        if pending:
            log.warning(
                "writer.recovered",
                workspace=self.store.name,
                writes=replayed,
                quarantined=len(pending) - replayed,
                elapsed_ms=round((time.monotonic() - started) * 1000, 1),
            )
        return replayed

    def _quarantine(self, seq: int, error: str, upserts: int, deletes: int) -> None:
        self.store.sqlite.journal_quarantine(seq, error)
        log.error(
            "writer.quarantined",
            workspace=self.store.name,
            seq=seq,
            upserts=upserts,
            deletes=deletes,
            error=error,
        )

    def write(self, batch: WriteBatch, embeddings: np.ndarray | None = None) -> WriteAck:
        self._checked = None
        if self._needs_recovery:
            # A failed write left its entry in the journal: finish or set it aside first,
            # so it is never replayed later on top of newer writes.
            self.recover()
        batch = self._with_stale_ids(batch)
        try:
            seq = self.store.sqlite.journal_begin(batch)
        except Exception as exc:
            if _disk_full(exc):
                raise StoreError(
                    f"write: the disk is full ({_one_line(exc)}); nothing was stored; "
                    "free some space and write again"
                ) from exc
            raise
        try:
            self._apply(batch, seq, embeddings)
        except BaseException as exc:
            self._needs_recovery = True
            if isinstance(exc, Exception) and _disk_full(exc):
                raise StoreError(
                    f"write: the disk is full ({_one_line(exc)}); this write was not "
                    "acknowledged: the next write finishes it from the journal, or sets it "
                    "aside if it fails again; free some space"
                ) from exc
            raise
        return WriteAck(upserted=len(batch.upserts), deleted=len(batch.delete_ids))

    def _with_stale_ids(self, batch: WriteBatch) -> WriteBatch:
        """Name every id a replaced or dropped source loses, so the journal holds them."""
        keep = {r.id for r in batch.upserts}
        stale = list(batch.delete_ids)
        sources = [(e.project, e.source) for e in batch.set_sources] + list(batch.drop_sources)
        for project, source in sources:
            stale.extend(i for i in self.store.sqlite.source_ids(project, source) if i not in keep)
        return batch.model_copy(update={"delete_ids": tuple(dict.fromkeys(stale))})

    def _apply(self, batch: WriteBatch, seq: int, embeddings: np.ndarray | None) -> None:
        if embeddings is None or len(embeddings) != len(batch.upserts):
            embeddings = self.embedder.embed([r.indexed_text for r in batch.upserts])
        vectors = self.store.vectors
        delay("writer.apply")
        vectors.delete(list(batch.delete_ids))
        vectors.upsert(list(batch.upserts), embeddings)
        failpoint("writer.after_vectors")
        self.store.sqlite.apply(batch, seq)

    def reindex_step(self, limit: int = REINDEX_BATCH) -> bool:
        """One step of re-indexing a workspace whose index is older than `TEXT_FORMAT`:
        records of the next sources whose context line is not what this version indexes are
        written again (journaled, re-embedded) until `limit` are written. Returns whether
        more is left; the last step records the new format. Steps are separate messages, so
        other writes and reads interleave with a long re-index."""
        sqlite = self.store.sqlite
        if self._reindex is None:
            if sqlite.text_format() >= TEXT_FORMAT:
                return False
            sources = sqlite.indexed_sources()
            self._reindex = Reindexing(sources=deque(sources), total=len(sources))
            log.warning(
                "writer.reindex_started",
                workspace=self.store.name,
                sources=len(sources),
                text_format=[sqlite.text_format(), TEXT_FORMAT],
            )
        job = self._reindex
        changed: list[Record] = []
        while job.sources and len(changed) < limit:
            project, source = job.sources.popleft()
            records = sqlite.source_records(project, source)
            lang = records[0].lang if records else ""
            contexts = chunk_contexts(source, [r.content for r in records], lang)
            changed.extend(
                r.model_copy(update={"context": c})
                for r, c in zip(records, contexts, strict=True)
                if r.context != c
            )
            job.done += 1
        if changed:
            self.write(WriteBatch(upserts=tuple(changed)))
            job.records += len(changed)
        if job.sources:
            return True
        sqlite.set_meta("text_format", str(TEXT_FORMAT))
        log.warning(
            "writer.reindex_done",
            workspace=self.store.name,
            sources=job.total,
            records=job.records,
            elapsed_ms=round((time.monotonic() - job.started) * 1000, 1),
        )
        self._reindex = None
        return False

    def merge_step(self) -> bool:
        """One step of merging the BM25 index's segments; whether more may be left. The
        records are as they were: a kept `check` answer still holds after it."""
        held = self._checked
        # SQLite's side only: a vector count that moved still differs from the kept one.
        current = held is not None and held[0][:2] == self._sqlite_state()
        try:
            more = self.store.sqlite.merge_index()
        except sqlite3.Error as exc:  # the index still answers, with more segments to read
            log.warning("writer.merge_failed", workspace=self.store.name, error=_one_line(exc))
            more = False
        if held is not None and current:
            # Only this connection's change count moved. Not `_state()` again: a commit by
            # another connection just after this step must still be seen by the next check.
            _, version, vectors = held[0]
            self._checked = ((self.store.sqlite.conn.total_changes, version, vectors), held[1])
        return more

    def reindex_progress(self) -> dict[str, int]:
        """Sources re-indexed of how many, while a re-index runs (else empty)."""
        job = self._reindex
        return {} if job is None else {"done": job.done, "total": job.total}

    def check(self, deep: bool = False) -> dict[str, Any]:
        """Counts and whether the indexes agree (`status`); with `deep`, the deep check's
        findings too.

        The plain check lists every id on both sides and integrity-checks the FTS index:
        seconds at a million records, in the writer's mailbox. Its answer is kept, and given
        again while the store is as it was then: no write here since (the writer's own
        changes), no commit by another connection (SQLite's `data_version`, which a hand
        edit or another process moves) and the same number of vectors. `deep` always reads
        everything again."""
        if deep:
            report = deep_check(self.store.sqlite, self.store.vectors, DIMENSIONS)
            self._checked = None
            return {**self.check(), "findings": report.lines()}
        held = self._checked
        if held is not None and held[0] == self._state():
            found = dict(held[1])
        else:
            found = self._compare()
            # Taken after the comparison: the FTS integrity-check is itself a statement.
            self._checked = (self._state(), dict(found))
        return {
            **found,
            "text_format": self.store.sqlite.text_format(),
            "reindex": self.reindex_progress(),
        }

    def _state(self) -> tuple[int, int, int]:
        return (*self._sqlite_state(), self.store.vectors.count())

    def _sqlite_state(self) -> tuple[int, int]:
        """This connection's own change count, and SQLite's count of others' commits."""
        conn = self.store.sqlite.conn
        return conn.total_changes, int(conn.execute("PRAGMA data_version").fetchone()[0])

    def _compare(self) -> dict[str, Any]:
        sqlite = self.store.sqlite
        counts = sqlite.counts()
        lexical_ids = sqlite.ids()
        vector_ids = self.store.vectors.ids()
        return {
            "projects": counts["projects"],
            "records": counts["records"],
            "vectors": len(vector_ids),
            "facts": counts["facts"],
            "facts_current": counts["facts_current"],
            "journal_pending": counts["journal_pending"],
            "project_last_write": counts["project_last_write"],
            "journal_quarantined": counts["journal_quarantined"],
            "only_in_vectors": len(vector_ids - lexical_ids),
            "only_in_lexical": len(lexical_ids - vector_ids),
            "fts_ok": sqlite.fts_integrity() and counts["fts_rows"] == counts["records"],
        }

    def repair(self) -> dict[str, list[str]]:
        """Finish the journal, then rebuild what the deep check finds; found and done."""
        self._checked = None
        replayed = self.recover()
        report = deep_check(self.store.sqlite, self.store.vectors, DIMENSIONS)
        vectors, done = repair(self.store.sqlite, self.store.vectors, self.embedder, report)
        self.store.vectors = vectors
        if replayed:
            done.insert(0, f"finished {replayed} journaled writes")
        after = deep_check(self.store.sqlite, self.store.vectors, DIMENSIONS)
        log.warning("writer.repaired", workspace=self.store.name, found=report.lines(), done=done)
        return {"found": report.lines(), "done": done, "left": after.lines()}

    def source_state(self, project: str, source_type: str) -> dict[str, SourceEntry]:
        """The registry's entry of every source of a project. An entry whose records are not
        all there (a store copied mid-write, records deleted by hand) is given as changed
        (no mtime, no hash), so the next ingest reads the file and writes it whole again
        instead of skipping it as unchanged."""
        sqlite = self.store.sqlite
        held = sqlite.record_counts(project, source_type)
        out: dict[str, SourceEntry] = {}
        for source in sqlite.sources_under(project, source_type):
            entry = sqlite.source_entry(project, source)
            if entry is None:
                continue
            if held.get(source, 0) != entry.chunk_count:
                log.warning(
                    "writer.source_incomplete",
                    workspace=self.store.name,
                    project=project,
                    source=source,
                    records=held.get(source, 0),
                    chunks=entry.chunk_count,
                )
                entry = entry.model_copy(update={"mtime": -1.0, "sha": ""})
            out[source] = entry
        return out


class WriterActor(pykka.ThreadingActor):
    """Recovery runs on the logic object before the actor starts, so its errors reach the caller."""

    def __init__(self, logic: Writer) -> None:
        super().__init__()
        self.logic = logic
        self.actor_name = logic.actor_name
        self._merging = False  # a MergeIndex is in the mailbox

    # Never skipped when late: a write that reached the mailbox is applied, so a caller that
    # gave up waiting cannot leave it half-known (it can read it back, or write it again).
    @traced("write", skip_late=False)
    def write(self, msg: Write, embeddings: np.ndarray | None = None) -> WriteAck:
        ack = self.logic.write(msg.batch, embeddings)
        self.merge_soon()
        return ack

    def merge_soon(self) -> None:
        """Merge the BM25 index's segments after the messages already in the mailbox, a step
        per message (queued writes go first), until a step finds nothing to merge."""
        if not self._merging:
            self._merging = True
            self._send_merge()

    def _send_merge(self) -> None:
        # Its own request, with no deadline: not a part of the write that caused it.
        msg = MergeIndex(
            request_id=new_request_id(), recall_id=RecallId(""), step=-1, deadline=None
        )
        self.actor_ref.proxy().merge_index(msg)

    @traced("merge_index", skip_late=False)
    def merge_index(self, msg: MergeIndex) -> bool:
        more = False
        try:
            more = self.logic.merge_step()
        finally:  # whatever a step raised, the next write asks for merging again
            if more:
                self._send_merge()
            else:
                self._merging = False
        return more

    # A step at a time, each a message of its own: writes queued meanwhile go first.
    @traced("reindex", skip_late=False)
    def reindex(self, msg: Reindex) -> bool:
        more = self.logic.reindex_step()
        if more:
            self.actor_ref.proxy().reindex(Reindex())
        return more

    @traced("check")
    def check(self, msg: Check) -> dict[str, Any]:
        return self.logic.check(msg.deep)

    @traced("repair")
    def repair(self, msg: Repair) -> dict[str, list[str]]:
        return self.logic.repair()

    @traced("source_state")
    def source_state(self, msg: SourceState) -> dict[str, SourceEntry]:
        return self.logic.source_state(msg.project, msg.source_type)


class WriterProxy:
    """Typed view of `WriterActor`'s proxy."""

    write = proxy_method(WriterActor.write)
    repair = proxy_method(WriterActor.repair)
    source_state = proxy_method(WriterActor.source_state)
    check = proxy_method(WriterActor.check)
    reindex = proxy_method(WriterActor.reindex)
    merge_soon = proxy_method(WriterActor.merge_soon)
    merge_index = proxy_method(WriterActor.merge_index)
