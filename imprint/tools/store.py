"""store: keep a decision, finding or note as a memory."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from imprint.tools._app import WRITE, App, run_tool, tool
from imprint.writes.memories import remember, restore_memories

__all__ = ["register"]


def register(server: MCPServer, app: App) -> None:
    @tool(server, "store", WRITE)
    async def store(
        content: Annotated[str, Field(description="self-contained, <= 8000 chars")],
        project: Annotated[str, Field(description="letters, digits, . _ - /")] = "",
        type: Annotated[
            str,
            Field(
                description="decision, pattern, finding, bug, preference, architecture, "
                "milestone or note"
            ),
        ] = "note",
        domains: Annotated[list[str] | None, Field(description="broad areas, <=10")] = None,
        topics: Annotated[list[str] | None, Field(description="specific topics, <=10")] = None,
        supersedes: Annotated[
            list[str] | None,
            Field(description="ids of memories this replaces; search hides them"),
        ] = None,
        workspace: str = "",
        restore: Annotated[
            list[str] | None,
            Field(description='superseded ids to show again (content="")'),
        ] = None,
    ) -> str:
        """Remember for later sessions a decision and why, a finding, a bug and its fix, a
        preference. Returns the id; the same text in the same project is stored once."""
        if restore and not content.strip():
            return await run_tool(restore_memories, app.writes, restore, workspace)
        stored = await run_tool(
            remember, app.writes, content, project, type, domains, topics, workspace, supersedes
        )
        return stored.line()
