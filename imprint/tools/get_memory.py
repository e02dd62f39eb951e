"""get_memory: one whole record, its tags, and where its source is on this computer."""

from __future__ import annotations

import time
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from imprint.reads.gateway import Reads
from imprint.reads.layout import escape_field
from imprint.reads.memory import GetMemoryArgs, MemoryRow, memory_row
from imprint.reads.search import day
from imprint.tools._app import READ, App, read_tool, tool
from imprint.types import WorkspaceName

__all__ = ["format_memory", "register"]


def format_memory(row: MemoryRow) -> str:
    r = row.record
    when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(r.created_at))
    header = [
        f"id: {r.id}",
        f"project: {r.project or '-'}",
        f"source: {r.source or '(inline)'}#{r.chunk_index} of {r.chunk_count} ({r.source_type})",
        f"type: {r.type} (tagged by {r.tagged_by})",
        f"tags: lang={r.lang or '-'} layer={r.layer or '-'} kind={r.kind or '-'} "
        f"domains={','.join(r.domains) or '-'} topics={','.join(r.topics) or '-'}",
        f"created: {when} UTC",
    ]
    if row.superseded_by is not None:
        on = day(row.superseded_by.at)
        header.append(f"superseded by {row.superseded_by.new} on {on}")
    if row.supersedes:
        header.append("supersedes: " + ", ".join(link.old for link in row.supersedes))
    header += [
        "path_context: " + " ".join(f"{k}={v}" for k, v in row.path_context.items()),
    ]
    return "\n".join([*map(escape_field, header), "", r.content])


def register(server: MCPServer, app: App) -> None:
    @tool(server, "get_memory", READ)
    async def get_memory(
        id: Annotated[str, Field(description="a record id")],
        workspace: str = "",
    ) -> str:
        """One whole record: content, project, source#chunk, type, tags, supersede links,
        and path_context (server cwd; whether the source file exists here)."""

        def here(reads: Reads, ws: WorkspaceName, args: GetMemoryArgs) -> MemoryRow:
            return memory_row(reads, ws, args, app.cwd)

        row = await read_tool(app, here, GetMemoryArgs(id=id), workspace)
        return format_memory(row)
