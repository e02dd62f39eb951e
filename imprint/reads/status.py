"""status rows: counts per project, facts, and whether the vector and lexical indexes agree."""

from __future__ import annotations

from pydantic import BaseModel

from imprint.actors.lifecycle import Runtime
from imprint.actors.write_messages import Check, Repair
from imprint.reads.deadline import call_deadline
from imprint.store.context import TEXT_FORMAT

__all__ = ["StatusRow", "repair_workspace", "status_row"]

STATUS_TIMEOUT_SEC = 120.0
REPAIR_TIMEOUT_SEC = 3600.0  # re-embedding a large workspace takes minutes


class StatusRow(BaseModel):
    workspace: str
    projects: dict[str, dict[str, int]]
    records: int
    vectors: int
    facts: int
    facts_current: int
    journal_pending: int
    journal_quarantined: int = 0
    only_in_vectors: int
    only_in_lexical: int
    fts_ok: bool
    store: str
    findings: list[str] | None = None  # the deep check's, when it ran
    # Newest record's created_at per project (epoch seconds); for the dashboard.
    project_last_write: dict[str, float] = {}
    # The format the index was built with (`imprint.store.context`), and while an older one
    # is re-indexed in the background, sources done of how many.
    text_format: int = TEXT_FORMAT
    reindex: dict[str, int] = {}

    @property
    def last_write(self) -> float:
        return max(self.project_last_write.values(), default=0.0)

    @property
    def consistent(self) -> bool:
        return (
            not self.findings
            and self.fts_ok
            and self.only_in_vectors == 0
            and self.only_in_lexical == 0
            and self.journal_pending == 0
        )


def status_row(runtime: Runtime, workspace: str = "", check: bool = False) -> StatusRow:
    ws = runtime.resolve(workspace)
    store = runtime.workspace(ws)
    # Through the writer's mailbox: no write is half-applied while the indexes are compared.
    with call_deadline(STATUS_TIMEOUT_SEC) as deadline:
        found = deadline.wait(runtime.writer(ws).check(Check(deep=check)), "status")
    return StatusRow(workspace=ws, store=store.chroma_url or "embedded", **found)


def repair_workspace(runtime: Runtime, workspace: str = "") -> dict[str, list[str]]:
    """Rebuild whichever index of the workspace disagrees (found, done, still left)."""
    ws = runtime.resolve(workspace)
    runtime.workspace(ws)
    with call_deadline(REPAIR_TIMEOUT_SEC) as deadline:
        return deadline.wait(runtime.writer(ws).repair(Repair()), "repair")
