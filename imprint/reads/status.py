"""status rows: counts per project, facts, and whether the vector and lexical indexes agree."""

from __future__ import annotations

from pydantic import BaseModel

from imprint.actors.lifecycle import Runtime
from imprint.actors.write_messages import Check
from imprint.reads.deadline import call_deadline

__all__ = ["StatusRow", "status_row"]

STATUS_TIMEOUT_SEC = 120.0


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
    # Newest record's created_at per project (epoch seconds); for the dashboard.
    project_last_write: dict[str, float] = {}

    @property
    def last_write(self) -> float:
        return max(self.project_last_write.values(), default=0.0)

    @property
    def consistent(self) -> bool:
        return (
            self.fts_ok
            and self.only_in_vectors == 0
            and self.only_in_lexical == 0
            and self.journal_pending == 0
        )


def status_row(runtime: Runtime, workspace: str = "") -> StatusRow:
    ws = runtime.resolve(workspace)
    store = runtime.workspace(ws)
    # Through the writer's mailbox: no write is half-applied while the indexes are compared.
    with call_deadline(STATUS_TIMEOUT_SEC) as deadline:
        check = deadline.wait(runtime.writer(ws).check(Check()), "status")
    return StatusRow(workspace=ws, store=store.chroma_url or "embedded", **check)
