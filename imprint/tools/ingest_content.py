"""ingest_content: index a named piece of text; the same name replaces what it held."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from imprint.tools._app import REPLACE, App, run_tool, tool
from imprint.writes.content import ingest_text

__all__ = ["register"]


def register(server: MCPServer, app: App) -> None:
    @tool(server, "ingest_content", REPLACE)
    async def ingest_content(
        name: Annotated[str, Field(description="becomes its source")],
        content: Annotated[str, Field(description="the text; Markdown split at headings")],
        project: str = "",
        workspace: str = "",
    ) -> str:
        """Index inline text (notes, a spec, a pasted page) for search and file_chunks.
        The same name again replaces it."""
        return await run_tool(ingest_text, app.writes, name, content, project, workspace)
