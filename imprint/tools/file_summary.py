"""file_summary: what Imprint holds about one source, without reading it all."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from imprint.reads.summary import FileSummaryArgs, format_summary, summary_row
from imprint.tools._app import READ, App, read_tool, tool

__all__ = ["register"]


def register(server: MCPServer, app: App) -> None:
    @tool(server, "file_summary", READ)
    async def file_summary(
        source: Annotated[str, Field(description="as search shows it")],
        project: Annotated[str, Field(description="if two share the source")] = "",
        workspace: str = "",
    ) -> str:
        """Profile of one source: chunk count, mtime, language, layer, record types, topics
        and a preview."""
        args = FileSummaryArgs(source=source, project=project)
        row = await read_tool(app, summary_row, args, workspace)
        return format_summary(row)
