"""kg_edit: add a temporal fact, or end one that no longer holds."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from imprint.tools._app import WRITE, App, run_tool, tool
from imprint.writes.facts import edit_facts

__all__ = ["register"]


def register(server: MCPServer, app: App) -> None:
    @tool(server, "kg_edit", WRITE)
    async def kg_edit(
        action: Literal["add", "end"],
        subject: Annotated[str, Field(description="add: what it is about")] = "",
        predicate: Annotated[str, Field(description="add: relation (uses, ...)")] = "",
        object: Annotated[str, Field(description="add: the value")] = "",
        fact_id: Annotated[str, Field(description="end: its id from kg_query")] = "",
        source: Annotated[str, Field(description="add: where it is known from")] = "",
        workspace: str = "",
    ) -> str:
        """Add a fact that holds from now on (subject, predicate, object), or end one that
        stopped holding (fact_id). Ended facts stay queryable."""
        return await run_tool(
            edit_facts, app.writes, action, subject, predicate, object, fact_id, source, workspace
        )
