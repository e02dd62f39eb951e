"""list_sources: what has been ingested, with chunk counts."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from imprint.reads.layout import escape_field
from imprint.reads.sources import ListSourcesArgs, source_rows
from imprint.store.records import SourceRow
from imprint.tools._app import READ, App, read_tool, tool

__all__ = ["format_sources", "register"]

MAX_OUTPUT = 9000


def format_sources(rows: list[SourceRow], total: int) -> str:
    if not rows:
        return "no sources match"
    lines = [f"{total} sources" + (f", first {len(rows)}:" if total > len(rows) else ":")]
    used = len(lines[0])
    for i, r in enumerate(rows):
        line = escape_field(
            f"{r.project or '-'} | {r.source} | {r.chunks} chunks | "
            f"{r.source_type} {r.lang or '-'} {r.layer or '-'}"
        )
        if used + len(line) + 1 > MAX_OUTPUT:
            lines.append(f"({len(rows) - i} more not shown; narrow with project, lang or layer)")
            break
        lines.append(line)
        used += len(line) + 1
    return "\n".join(lines)


def register(server: MCPServer, app: App) -> None:
    @tool(server, "list_sources", READ)
    async def list_sources(
        project: Annotated[str, Field(description="only this project")] = "",
        lang: Annotated[str, Field(description="only this language")] = "",
        layer: Annotated[str, Field(description="only docs, source, test or config")] = "",
        limit: Annotated[int, Field(description="1-200")] = 50,
        workspace: str = "",
    ) -> str:
        """Ingested sources (files, URLs, named content), a line each: project, source,
        chunks, type, language, layer; and how many match."""
        args = ListSourcesArgs(project=project, lang=lang, layer=layer, limit=limit)
        rows, total = await read_tool(app, source_rows, args, workspace)
        return format_sources(rows, total)
