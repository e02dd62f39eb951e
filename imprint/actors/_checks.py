"""The writer's check of its workspace's two indexes, with the plain check's answer kept.

The plain check lists every id on both sides and integrity-checks the FTS index: seconds at
a million records, in the writer's mailbox. Its answer is kept, and given again while the
store is as it was then: no write by the writer since (its own changes), no commit by
another connection (SQLite's `data_version`, which a hand edit or another process moves) and
the same number of vectors. The deep check always reads everything again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from imprint._faults import delay
from imprint.store.check import IndexCheck
from imprint.store.embedder import DIMENSIONS
from imprint.store.integrity import deep_check
from imprint.store.workspace import WorkspaceStore

__all__ = ["IndexChecks"]

T = TypeVar("T")
_State = tuple[int, int, int]


class IndexChecks:
    def __init__(self, store: WorkspaceStore) -> None:
        self.store = store
        # The plain check's last answer, and the state of the store it was taken in.
        self._held: tuple[_State, IndexCheck] | None = None

    def forget(self) -> None:
        """The writer changes the store: the kept answer no longer holds."""
        self._held = None

    def check(self, reindex: dict[str, int], deep: bool = False) -> IndexCheck:
        """Counts and whether the indexes agree (`status`); with `deep`, the deep check's
        findings too. `reindex`: sources re-indexed of how many, while a re-index runs."""
        if deep:
            report = deep_check(self.store.sqlite, self.store.vectors, DIMENSIONS)
            self._held = None
            counts = self._compare(unreadable=bool(report.vector_error))
            if not report.vector_error:
                self._held = (self._state(), counts)
            return counts.model_copy(
                update={
                    "text_format": self.store.sqlite.text_format(),
                    "reindex": reindex,
                    "findings": report.lines(),
                }
            )
        held = self._held
        if held is not None and held[0] == self._state():
            found = held[1]
        else:
            found = self._compare()
            # Taken after the comparison: the FTS integrity-check is itself a statement.
            self._held = (self._state(), found)
        return found.model_copy(
            update={"text_format": self.store.sqlite.text_format(), "reindex": reindex}
        )

    def across(self, step: Callable[[], T]) -> T:
        """Run `step`, one that leaves the records as they were (a merge of the BM25
        index's segments): a kept answer still current before it stays current after it."""
        held = self._held
        # SQLite's side only: a vector count that moved still differs from the kept one.
        current = held is not None and held[0][:2] == self._sqlite_state()
        result = step()
        if held is not None and current:
            # Only this connection's change count moved. Not `_state()` again: a commit by
            # another connection just after the step must still be seen by the next check.
            _, version, vectors = held[0]
            self._held = ((self.store.sqlite.conn.total_changes, version, vectors), held[1])
        return result

    def _state(self) -> _State:
        return (*self._sqlite_state(), self.store.vectors.count())

    def _sqlite_state(self) -> tuple[int, int]:
        """This connection's own change count, and SQLite's count of others' commits."""
        conn = self.store.sqlite.conn
        return conn.total_changes, int(conn.execute("PRAGMA data_version").fetchone()[0])

    def _compare(self, unreadable: bool = False) -> IndexCheck:
        """Both sides' ids compared. `unreadable`: the deep check could not read Chroma (its
        finding says so); a truncated HNSW segment fails every read, the listing of ids as
        much as a search, and then no vector is counted instead of the check failing."""
        delay("writer.check.list_ids")  # at 0 s, counts the listings (tests/test_store.py)
        sqlite = self.store.sqlite
        counts = sqlite.counts()
        lexical_ids = sqlite.ids()
        try:
            vector_ids = self.store.vectors.ids()
        except Exception:
            if not unreadable:
                raise
            vector_ids = set()
        return IndexCheck(
            projects=counts["projects"],
            records=counts["records"],
            vectors=len(vector_ids),
            facts=counts["facts"],
            facts_current=counts["facts_current"],
            journal_pending=counts["journal_pending"],
            project_last_write=counts["project_last_write"],
            journal_quarantined=counts["journal_quarantined"],
            only_in_vectors=len(vector_ids - lexical_ids),
            only_in_lexical=len(lexical_ids - vector_ids),
            fts_ok=sqlite.fts_integrity() and counts["fts_rows"] == counts["records"],
        )
