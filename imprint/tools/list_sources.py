"""list_sources: what has been ingested, with chunk counts."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from imprint.actors.messages import SqlRead
from imprint.tools._app import READ, App, clamp, run_tool, tool
from imprint.tools._evidence import escape_field
from imprint.tools._reads import Deadline, Reads

__all__ = ["format_sources", "register", "source_rows"]

READ_TIMEOUT_SEC = 30.0
MAX_OUTPUT = 9000


def source_rows(
    reads: Reads,
    project: str = "",
    lang: str = "",
    layer: str = "",
    limit: int = 50,
    workspace: str = "",
) -> tuple[list[dict[str, Any]], int]:
    """Sources (up to `limit`, 1-200) with their chunk counts, and how many match in all."""
    limit = clamp(limit, 1, 200)
    ws = reads.open(workspace)
    rows, total = Deadline(READ_TIMEOUT_SEC).wait(
        reads.sql(
            SqlRead(
                workspace=ws,
                op="list_sources",
                args={"project": project, "lang": lang, "layer": layer, "limit": limit},
            )
        ),
        "list_sources",
    )
    return list(rows), int(total)


def format_sources(rows: list[dict[str, Any]], total: int) -> str:
    if not rows:
        return "no sources match"
    lines = [f"{total} sources" + (f", first {len(rows)}:" if total > len(rows) else ":")]
    used = len(lines[0])
    for i, r in enumerate(rows):
        line = escape_field(
            f"{r['project'] or '-'} | {r['source']} | {r['chunks']} chunks | "
            f"{r['source_type']} {r['lang'] or '-'} {r['layer'] or '-'}"
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
        layer: Annotated[
            str, Field(description="only this layer: docs, source, test, config")
        ] = "",
        limit: Annotated[int, Field(description="sources to list, 1-200")] = 50,
        workspace: Annotated[str, Field(description="workspace; empty = active")] = "",
    ) -> str:
        """Ingested sources (files, URLs, named content), one line each: project, source,
        chunk count, type, language and layer, with the total that match."""
        rows, total = await run_tool(source_rows, app.reads, project, lang, layer, limit, workspace)
        return format_sources(rows, total)
