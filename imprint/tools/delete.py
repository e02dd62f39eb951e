"""delete: remove one memory by id, or every chunk of one source."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from imprint.tools._app import REPLACE, App, run_tool, tool
from imprint.writes.memories import delete_records

__all__ = ["register"]


def register(server: MCPServer, app: App) -> None:
    @tool(server, "delete", REPLACE)
    async def delete(
        id: Annotated[str, Field(description="a memory id")] = "",
        source: Annotated[str, Field(description="or a source")] = "",
        project: Annotated[str, Field(description="the source's, if ambiguous")] = "",
        workspace: str = "",
    ) -> str:
        """Permanently delete one memory (id) or one source with all its chunks (source).
        Give exactly one."""
        return await run_tool(delete_records, app.writes, id, source, project, workspace)
