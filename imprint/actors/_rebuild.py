"""The writer's long steps, each a message of its own so other writes and reads interleave:
embedding every record again for a new embedder (`reembed_due`), re-indexing a store older
than `TEXT_FORMAT` (`reindex_step`) and merging the BM25 index's segments (`merge_step`).
`Rebuilds` is a part of `imprint.actors.writer.Writer`, which holds the store and writes.
"""

from __future__ import annotations

import sqlite3
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from imprint._faults import fail
from imprint._watchdog import sigterm_kills
from imprint.actors._checks import IndexChecks
from imprint.actors._rechunk import Rechunk, reindexed
from imprint.actors._room import one_line
from imprint.logs import get_logger
from imprint.store.context import TEXT_FORMAT
from imprint.store.embedder import Embedder
from imprint.store.integrity import reembed
from imprint.store.records import WriteBatch
from imprint.store.workspace import WorkspaceStore

__all__ = ["REINDEX_BATCH", "Rebuilds", "Reembedding", "Reindexing"]

log = get_logger("imprint.writer")

# Records a re-index step writes at most (more when one source has more): a step holds the
# writer for about this many embeddings.
REINDEX_BATCH = 64


@dataclass
class Reindexing:
    """A re-index in progress: the sources still to look at, of how many."""

    sources: deque[tuple[str, str]]
    total: int
    done: int = 0
    records: int = 0
    started: float = field(default_factory=time.monotonic)


@dataclass
class Reembedding:
    """Vectors made by another embedder being made again: the records walked in rowid
    order up to `after`, how many of how many, and the identity (`Embedder.identity`) the
    store records when they are done."""

    total: int
    identity: str
    after: int = 0
    done: int = 0
    started: float = field(default_factory=time.monotonic)


class Rebuilds:
    """The re-embed, re-index and merge steps of `Writer`, on its store and through its
    writes."""

    store: WorkspaceStore
    embedder: Embedder
    rechunk: Rechunk
    _checks: IndexChecks
    _reindex: Reindexing | None
    _reembed: Reembedding | None
    _vectors_stale: bool

    if TYPE_CHECKING:  # the Writer's own

        def write(self, batch: WriteBatch) -> object: ...

        def _no_room(self, batch: WriteBatch | None, what: str) -> str | None: ...

        def _reconnect(self, *, strict: bool) -> None: ...

    def reembed_due(self) -> bool:
        """Whether the store's vectors were made by another embedder than this one (the
        identity it recorded differs: `embedding.model_path`, `tokenizer_path` or
        `max_tokens` changed), so `reindex_step` embeds every record again first. A store
        that recorded none (new, or made before it was recorded) records this one's."""
        held = self.store.sqlite.meta("embedder")
        if held is None:
            self.store.sqlite.set_meta("embedder", self.embedder.identity())
            return False
        return held != self.embedder.identity()

    def _reembed_step(self, limit: int) -> bool:
        """One step of embedding every record again with this embedder (`reembed_due`):
        `limit` records, their vectors replaced in place (their text, ids and SQLite rows
        are as they were). Whether more is left; the last step records the identity. A
        crash before that leaves the old identity recorded: the next open starts over."""
        job = self._reembed
        sqlite = self.store.sqlite
        if job is None:
            if not self.reembed_due():
                return False
            total = sqlite.conn.execute("SELECT COUNT(*) FROM records").fetchone()[0]
            job = Reembedding(total=total, identity=self.embedder.identity())
            self._reembed = job
            log.warning(
                "writer.reembed_started",
                workspace=self.store.name,
                records=job.total,
                was=sqlite.meta("embedder"),
                now=job.identity,
            )
        page = sqlite.ids_after(job.after, limit)
        if page:
            # A record written meanwhile has its new vector already; one rewritten (a new
            # rowid) is walked again: embedded twice, never skipped.
            self._checks.forget()
            if self._vectors_stale:
                self._reconnect(strict=True)
            try:
                with sigterm_kills():
                    reembed(sqlite, self.store.vectors, self.embedder, [rid for _, rid in page])
            except Exception:
                self._reconnect(strict=False)
                raise
            job.after = page[-1][0]
            job.done = min(job.done + len(page), job.total)
            if len(page) == limit:
                return True
        self.store.sqlite.set_meta("embedder", job.identity)
        log.warning(
            "writer.reembed_done",
            workspace=self.store.name,
            records=job.total,
            elapsed_ms=round((time.monotonic() - job.started) * 1000, 1),
        )
        self._reembed = None
        return False

    def reindex_step(self, limit: int = REINDEX_BATCH) -> bool:
        """One step of re-indexing a workspace whose index is older than `TEXT_FORMAT`:
        records of the next sources whose context line is not what this version indexes are
        written again (journaled, re-embedded) until `limit` are written. Returns whether
        more is left; the last step records the new format. Steps are separate messages, so
        other writes and reads interleave with a long re-index."""
        refused = self._no_room(None, "re-index")
        if refused is not None:  # the next open takes it up again
            log.warning("writer.reindex_paused", workspace=self.store.name, reason=refused)
            return False
        if self._reembed_step(limit):
            return True
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
        written = 0
        while job.sources and written < limit:
            project, source = job.sources.popleft()
            batch = reindexed(sqlite, project, source, self.rechunk)
            if batch.upserts:
                # One source per write: a re-chunked file's old chunks go in the same write.
                self.write(batch)
                written += len(batch.upserts)
            job.done += 1
        job.records += written
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
        fail("writer.merge_step")  # a step that crashes (tests/test_index_merge.py)
        return self._checks.across(self._merge)

    def _merge(self) -> bool:
        try:
            fail("writer.merge", sqlite3.OperationalError)  # the disk full, say
            return self.store.sqlite.merge_index()
        except sqlite3.Error as exc:  # the index still answers, with more segments to read
            log.warning("writer.merge_failed", workspace=self.store.name, error=one_line(exc))
            return False

    def reindex_progress(self) -> dict[str, int]:
        """Sources re-indexed of how many, while a re-index runs (else empty)."""
        job = self._reindex
        return {} if job is None else {"done": job.done, "total": job.total}
