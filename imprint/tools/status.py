"""status: counts per project, facts, and whether the vector and lexical indexes agree."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from imprint.reads.status import format_status, status_row
from imprint.tools._app import READ, App, run_tool, tool
from imprint.watch import format_watch, watch_rows

__all__ = ["register"]


def register(server: MCPServer, app: App) -> None:
    @tool(server, "status", READ)
    async def status(
        workspace: str = "",
        check: Annotated[bool, Field(description="record by record")] = False,
    ) -> str:
        """Workspace health: records and sources per project, facts, and whether the vector
        and lexical indexes agree."""
        row = await run_tool(status_row, app.reads, workspace, check)
        watched = format_watch(watch_rows(app.runtime.data_dir))
        return "\n".join([format_status(row), *watched])
