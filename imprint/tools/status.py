"""status: counts per project, facts, and whether the vector and lexical indexes agree."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, Field

from imprint.actors.lifecycle import Runtime
from imprint.actors.messages import Check
from imprint.tools._app import READ, App, run_tool, tool
from imprint.tools._reads import Deadline

__all__ = ["StatusRow", "format_status", "register", "status_row"]

STATUS_TIMEOUT_SEC = 120.0


class StatusRow(BaseModel):
    workspace: str
    projects: dict[str, dict[str, int]]
    records: int
    vectors: int
    facts: int
    facts_current: int
    journal_pending: int
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
    check = Deadline(STATUS_TIMEOUT_SEC).wait(runtime.writer(ws).check(Check()), "status")
    return StatusRow(workspace=ws, store=store.chroma_url or "embedded", **check)


def format_status(row: StatusRow) -> str:
    lines = [f"workspace {row.workspace} (chroma: {row.store})"]
    if row.projects:
        for project, c in sorted(row.projects.items()):
            lines.append(
                f"  project {project or '-'}: {c['records']} records, {c['sources']} sources"
            )
    else:
        lines.append("  no records yet")
    lines.append(f"  facts: {row.facts} ({row.facts_current} current)")
    verdict = "consistent" if row.consistent else "INCONSISTENT"
    lines.append(
        f"  indexes: {verdict} (vectors {row.vectors}, lexical {row.records}, "
        f"only in vectors {row.only_in_vectors}, only in lexical {row.only_in_lexical}, "
        f"fts {'ok' if row.fts_ok else 'damaged'}, journal pending {row.journal_pending})"
    )
    return "\n".join(lines)


def register(server: MCPServer, app: App) -> None:
    @tool(server, "status", READ)
    async def status(
        workspace: Annotated[str, Field(description="workspace; empty = active")] = "",
    ) -> str:
        """Health of a workspace: records and sources per project, facts, and whether the
        vector and lexical indexes agree (with counts when they do not)."""
        row = await run_tool(status_row, app.runtime, workspace)
        return format_status(row)
