"""file_chunks: a range of one source's chunks, in order, with the true total."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from imprint.reads.chunks import ChunkRows, FileChunksArgs, chunk_rows
from imprint.reads.layout import clamp, escape_field
from imprint.tools._app import READ, App, read_tool, tool

__all__ = ["format_chunks", "register"]


def format_chunks(rows: ChunkRows, max_chars: int = 8000) -> str:
    """Whole chunks in order while they fit the character budget; the rest named by index.
    A chunk whose chunk before it is not shown here (the range's first, or after a gap) and
    that is a later piece of a long definition opens with that definition's signature
    (`Record.shown_text`), as a search hit on it does."""
    max_chars = clamp(max_chars, 1200, 12000)
    span = f"chunks {rows.start}-{rows.end} of {rows.total}"
    head = escape_field(f"{rows.source}: {span} (indexes 0-{rows.total - 1})")
    parts, used = [head], len(head)
    shown = 0
    before = -2
    for record in rows.records:
        line = escape_field(f"--- #{record.chunk_index} {record.id} ({record.project or '-'})")
        follows = record.chunk_index == before + 1
        block = f"{line}\n{record.content if follows else record.shown_text}"
        before = record.chunk_index
        if used + 2 + len(block) + 140 > max_chars:
            break
        parts.append(block)
        used += 2 + len(block)
        shown += 1
    if shown < len(rows.records):
        nxt = rows.records[shown].chunk_index
        parts.append(
            f"({len(rows.records) - shown} chunks of this range not shown: budget max_chars="
            f"{max_chars}; continue with start={nxt})"
        )
    elif rows.end < rows.total - 1 and rows.records:
        parts.append(f"(more: start={rows.records[-1].chunk_index + 1})")
    return "\n\n".join(parts)[:max_chars]


def register(server: MCPServer, app: App) -> None:
    @tool(server, "file_chunks", READ)
    async def file_chunks(
        source: Annotated[str, Field(description="as search shows it")],
        start: Annotated[int, Field(description=">= 0")] = 0,
        end: Annotated[int, Field(description="inclusive; -1 = start+9")] = -1,
        project: Annotated[str, Field(description="if two share the source")] = "",
        max_chars: Annotated[int, Field(description="chars, 1200-12000")] = 8000,
        workspace: str = "",
    ) -> str:
        """Read one source in order: whole chunks start..end (indexes), the true total and
        where to continue, within max_chars. To read around a hit."""
        args = FileChunksArgs(source=source, start=start, end=end, project=project)
        rows = await read_tool(app, chunk_rows, args, workspace)
        return format_chunks(rows, max_chars)
