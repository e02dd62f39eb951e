"""WriterActor: the only writer of a workspace's Chroma collection, FTS5 index and facts.

A write is journaled first, then applied to Chroma, then to SQLite together with the removal
of its journal entry (one transaction). A write is acknowledged only after both hold it. A
crash anywhere leaves the journal entry, and `recover` re-applies it: Chroma's upsert and
delete are idempotent and the SQLite step is one transaction, so both indexes end equal.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pykka
from pydantic import BaseModel, ConfigDict
from pykka.typing import proxy_method

from imprint._faults import delay, failpoint, hold
from imprint._priority import Priority
from imprint._watchdog import sigterm_kills
from imprint.actors._checks import IndexChecks
from imprint.actors._rebuild import Rebuilds, Reembedding, Reindexing
from imprint.actors._rechunk import Rechunk
from imprint.actors._room import DEFAULT_MIN_FREE_MB, disk_full, free_bytes, no_room, one_line
from imprint.actors._trace import new_request_id, traced
from imprint.actors.write_messages import (
    Backup,
    Check,
    MergeIndex,
    Reindex,
    Repair,
    SourceState,
    Write,
)
from imprint.errors import StoreError, failure_line
from imprint.logs import get_logger
from imprint.store.applying import Applying
from imprint.store.check import IndexCheck, RepairReport
from imprint.store.embedder import DIMENSIONS, Embedder
from imprint.store.integrity import deep_check, repair
from imprint.store.records import SourceEntry, WriteBatch
from imprint.store.snapshot import copy_store
from imprint.store.workspace import WorkspaceStore
from imprint.types import RecallId

__all__ = ["WriteAck", "Writer", "WriterActor", "WriterProxy", "free_bytes"]

log = get_logger("imprint.writer")


class WriteAck(BaseModel):
    model_config = ConfigDict(frozen=True)

    upserted: int
    deleted: int
    # (kind, count) of the secrets the write's gateway redacted before sending it.
    redacted: tuple[tuple[str, int], ...] = ()


class Writer(Rebuilds):
    """The write logic, testable without threads (the re-embed, re-index and merge steps:
    `imprint.actors._rebuild`)."""

    actor_name = "Writer"

    def __init__(
        self,
        store: WorkspaceStore,
        embedder: Embedder,
        *,
        min_free_mb: int = DEFAULT_MIN_FREE_MB,
        free_bytes: Callable[[Path], int] = free_bytes,
        rechunk: Rechunk | None = None,
        applying: Applying | None = None,
    ) -> None:
        """`applying`: where searches see the ids being applied (the Runtime's)."""
        self.store = store
        self.applying = applying or Applying()
        self.rechunk = rechunk or Rechunk()
        self.embedder = embedder
        self.actor_name = f"Writer[{store.name}]"
        self.min_free_mb = min_free_mb
        self._free_bytes = free_bytes
        self._needs_recovery = False
        # A failed write's vectors, by journal seq, so that finishing it does not embed again.
        self._embedded: dict[int, np.ndarray] = {}
        self._vectors_stale = False  # a Chroma write failed and reconnecting failed too
        self._reindex: Reindexing | None = None
        self._reembed: Reembedding | None = None
        self._checks = IndexChecks(store)

    def recover(self, *, strict: bool = False) -> int:
        """Finish every write a crash or a failure interrupted; returns how many were replayed.

        An entry that fails again here has now failed twice (its first attempt, and this
        replay): it is set aside in the quarantine table, logged, and counted by `status`,
        so one bad write cannot block every later call to the workspace. A full disk sets
        nothing aside: with too little room (or ENOSPC on the way) the entries wait for the
        next write, logged; with `strict` (a write finishing them first) that is a one-line
        StoreError instead. Failing to set an entry aside is one in either case."""
        started = time.monotonic()
        self._checks.forget()
        pending = self.store.sqlite.journal_pending()
        if not pending:
            self._needs_recovery = False
            return 0
        replayed = 0
        for seq, batch in pending:
            if isinstance(batch, str):
                self._quarantine(seq, batch, 0, 0)
                continue
            refused = self._no_room(batch, "write")
            if refused is None:
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
                    if not (disk_full(exc) or self._no_room(batch, "write")):
                        error = f"{type(exc).__name__}: {exc}"[:500]
                        self._quarantine(seq, error, len(batch.upserts), len(batch.delete_ids))
                        continue
                    refused = (
                        f"write: the disk is full ({one_line(exc)}) while an earlier write was "
                        "finished from the journal; nothing new was stored; free some space "
                        "and write again"
                    )
                else:
                    replayed += 1
                    continue
            self._needs_recovery = True
            log.warning(
                "writer.recover_deferred", workspace=self.store.name, seq=seq, reason=refused
            )
            if strict:
                raise StoreError(refused)
            return replayed
        self._needs_recovery = False
        log.warning(
            "writer.recovered",
            workspace=self.store.name,
            writes=replayed,
            quarantined=len(pending) - replayed,
            elapsed_ms=round((time.monotonic() - started) * 1000, 1),
        )
        return replayed

    def _quarantine(self, seq: int, error: str, upserts: int, deletes: int) -> None:
        try:
            self.store.sqlite.journal_quarantine(seq, error)
        except Exception as exc:
            self._needs_recovery = True
            full = "the disk is full: " if disk_full(exc) else ""
            raise StoreError(
                f"write: an earlier write that failed twice could not be set aside "
                f"({full}{one_line(exc)}); nothing new was stored; free some space and "
                "write again"
            ) from exc
        self._embedded.pop(seq, None)
        log.error(
            "writer.quarantined",
            workspace=self.store.name,
            seq=seq,
            upserts=upserts,
            deletes=deletes,
            error=error,
        )

    def _no_room(self, batch: WriteBatch | None, what: str) -> str | None:
        """Why the disk is too full to write `batch` safely, or None. Checked before any
        embedding and before Chroma is touched: Chroma's embedded client that meets ENOSPC
        mid-write was seen to hang at its next call, holding the interpreter lock."""
        if self.min_free_mb <= 0:
            return None
        try:
            free = self._free_bytes(self.store.folder)
        except OSError:
            return None  # cannot tell: write, and report ENOSPC if it comes
        return no_room(self.store.folder, free, self.min_free_mb, batch, what)

    def write(self, batch: WriteBatch, embeddings: np.ndarray | None = None) -> WriteAck:
        self._checks.forget()
        refused = self._no_room(batch, "write")
        if refused is not None:
            log.warning("writer.refused", workspace=self.store.name, reason=refused)
            raise StoreError(refused)
        if self._needs_recovery:
            # A failed write left its entry in the journal: finish or set it aside first,
            # so it is never replayed later on top of newer writes.
            self.recover(strict=True)
        batch = self._with_stale_ids(batch)
        try:
            seq = self.store.sqlite.journal_begin(batch)
        except Exception as exc:
            if disk_full(exc):
                raise StoreError(
                    f"write: the disk is full ({one_line(exc)}); nothing was stored; "
                    "free some space and write again"
                ) from exc
            raise
        try:
            self._apply(batch, seq, embeddings)
        except BaseException as exc:
            self._needs_recovery = True
            if not isinstance(exc, Exception):
                raise
            # Chroma says "Failed to apply logs to the metadata segment" where the disk
            # was full: how full it is now tells more than its words.
            full = disk_full(exc) or self._no_room(None, "write") is not None
            cause = None if full else failure_line(exc)
            if type(exc) is sqlite3.DatabaseError and cause is not None:
                # The file itself is damaged: its journal cannot finish anything.
                raise StoreError(f"write: {cause}") from exc
            what = "the disk is full" if full else "the store failed"
            raise StoreError(
                f"write: {what} ({cause or one_line(exc)}); this write was not "
                "acknowledged: the next write finishes it from the journal, or sets it "
                "aside if it fails again" + ("; free some space" if full else "")
            ) from exc
        return WriteAck(upserted=len(batch.upserts), deleted=len(batch.delete_ids))

    def _with_stale_ids(self, batch: WriteBatch) -> WriteBatch:
        """Name every id a replaced or dropped source loses, so the journal holds them."""
        keep = {r.id for r in batch.upserts}
        stale = list(batch.delete_ids)
        # A source set with none of its records upserted only has its registry entry
        # changed (a touched file, a moved commit): its records stay.
        upserted = {(r.project, r.source) for r in batch.upserts}
        replaced = [(e.project, e.source) for e in batch.set_sources]
        sources = [s for s in replaced if s in upserted] + list(batch.drop_sources)
        for project, source in sources:
            stale.extend(i for i in self.store.sqlite.source_ids(project, source) if i not in keep)
        return batch.model_copy(update={"delete_ids": tuple(dict.fromkeys(stale))})

    def _apply(self, batch: WriteBatch, seq: int, embeddings: np.ndarray | None) -> None:
        if embeddings is None or len(embeddings) != len(batch.upserts):
            embeddings = self._embedded.get(seq)
        if embeddings is None or len(embeddings) != len(batch.upserts):
            embeddings = self.embedder.embed([r.indexed_text for r in batch.upserts])
        self._embedded[seq] = embeddings  # until the entry is retired or set aside
        if self._vectors_stale:
            self._reconnect(strict=True)
        delay("writer.apply")
        # Searches meanwhile see these vectors before their records (`store.applying`).
        with self.applying.applying(self.store.name, (r.id for r in batch.upserts)):
            try:
                # Chroma's Rust calls keep the interpreter lock: SIGTERM must not need it.
                with sigterm_kills():
                    hold("writer.vectors")
                    self.store.vectors.delete(list(batch.delete_ids))
                    self.store.vectors.upsert(list(batch.upserts), embeddings)
            except Exception:
                self._reconnect(strict=False)
                raise
            failpoint("writer.after_vectors")
            self.store.sqlite.apply(batch, seq)
        self._embedded.pop(seq, None)

    def _reconnect(self, *, strict: bool) -> None:
        """A new Chroma client for the workspace: after a failed write the embedded one was
        seen to hang at its next call (a read as much as a write) for good, even once the
        disk had room again; a new client of the same folder works."""
        try:
            with sigterm_kills():
                self.store.vectors = self.store.vectors.reconnected()
        except Exception as exc:
            self._vectors_stale = True
            log.error("writer.reconnect_failed", workspace=self.store.name, error=one_line(exc))
            if strict:
                raise StoreError(
                    f"write: the vector store could not be opened again ({one_line(exc)}); "
                    "nothing new was stored"
                ) from exc
            return
        self._vectors_stale = False
        log.warning("writer.reconnected", workspace=self.store.name)

    def check(self, deep: bool = False) -> IndexCheck:
        """Counts and whether the indexes agree (`status`); with `deep`, the deep check's
        findings too (see `imprint.actors._checks`); whether the vectors are another
        embedder's, and records embedded again of how many while that is mended."""
        found = self._checks.check(self.reindex_progress(), deep)
        job = self._reembed
        return found.model_copy(
            update={
                "other_embedder": self.store.sqlite.meta("embedder") != self.embedder.identity(),
                "reembed": {} if job is None else {"done": job.done, "total": job.total},
            }
        )

    def repair(self) -> RepairReport:
        """Finish the journal, then rebuild what the deep check finds; found and done."""
        self._checks.forget()
        refused = self._no_room(None, "repair")
        if refused is not None:
            raise StoreError(refused)
        replayed = self.recover(strict=True)
        report = deep_check(self.store.sqlite, self.store.vectors, DIMENSIONS)
        vectors, done = repair(self.store.sqlite, self.store.vectors, self.embedder, report)
        self.store.vectors = vectors
        if replayed:
            done.insert(0, f"finished {replayed} journaled writes")
        after = deep_check(self.store.sqlite, self.store.vectors, DIMENSIONS)
        log.warning("writer.repaired", workspace=self.store.name, found=report.lines(), done=done)
        return RepairReport(found=report.lines(), done=done, left=after.lines())

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

    def __init__(self, logic: Writer, priority: Priority | None = None) -> None:
        super().__init__()
        self.logic = logic
        self._priority = priority
        self._proxy: pykka.ActorProxy[WriterActor] | None = None  # for the deferred re-index
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
        if more and self._proxy is None:
            # Made here, once: the deferred send runs in the thread of the last interactive
            # call to finish, before that call returns, and must cost it nothing.
            self._proxy = self.actor_ref.proxy()
        if more:
            # The next step (re-chunking, re-embedding) waits until no recall is in flight:
            # it takes the cores for a batch of records. Queued writes still go first.
            if self._priority is None:
                self._next_reindex()
            else:
                self._priority.after_interactive(self._next_reindex)
        return more

    def _next_reindex(self) -> None:
        try:
            if self._proxy is None:
                self._proxy = self.actor_ref.proxy()
            self._proxy.reindex(Reindex())
        except pykka.ActorDeadError:  # stopped meanwhile: the next open goes on from here
            log.info("writer.reindex.stopped", workspace=self.logic.store.name)

    @traced("check")
    def check(self, msg: Check) -> IndexCheck:
        return self.logic.check(msg.deep)

    @traced("repair")
    def repair(self, msg: Repair) -> RepairReport:
        return self.logic.repair()

    @traced("source_state")
    def source_state(self, msg: SourceState) -> dict[str, SourceEntry]:
        return self.logic.source_state(msg.project, msg.source_type)

    # The copy runs in this mailbox: no write lands in either index until it is done.
    @traced("backup")
    def backup(self, msg: Backup) -> dict[str, dict[str, int | str]]:
        return copy_store(self.logic.store, Path(msg.dest))


class WriterProxy:
    """Typed view of `WriterActor`'s proxy."""

    write = proxy_method(WriterActor.write)
    repair = proxy_method(WriterActor.repair)
    source_state = proxy_method(WriterActor.source_state)
    check = proxy_method(WriterActor.check)
    reindex = proxy_method(WriterActor.reindex)
    merge_soon = proxy_method(WriterActor.merge_soon)
    merge_index = proxy_method(WriterActor.merge_index)
    backup = proxy_method(WriterActor.backup)
