"""file_chunks: a range of one source's chunks, in order, with the true total."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, ConfigDict, Field

from imprint.actors.messages import SqlRead
from imprint.errors import InputError
from imprint.store.records import Record
from imprint.tools._app import READ, App, clamp, run_tool, tool
from imprint.tools._evidence import escape_field
from imprint.tools._reads import Deadline, Reads

__all__ = ["ChunkRows", "chunk_rows", "format_chunks", "register"]

READ_TIMEOUT_SEC = 30.0
MAX_RANGE = 50


class ChunkRows(BaseModel):
    model_config = ConfigDict(frozen=True)

    source: str
    start: int
    end: int
    total: int
    records: tuple[Record, ...]


def chunk_rows(
    reads: Reads,
    source: str,
    start: int = 0,
    end: int = -1,
    project: str = "",
    workspace: str = "",
) -> ChunkRows:
    """Chunks start..end (inclusive; end -1 = start + 9) of `source`, at most 50 at once."""
    if not isinstance(source, str) or not source.strip():
        raise InputError("source: must be a source path as search shows it (docs/index.md)")
    if start < 0:
        raise InputError(f"start: {start} is not allowed; a chunk index >= 0")
    end = start + 9 if end < 0 else end
    if end < start:
        raise InputError(f"end: {end} is not allowed; >= start ({start}), or -1")
    end = min(end, start + MAX_RANGE - 1)
    ws = reads.open(workspace)
    records, total = Deadline(READ_TIMEOUT_SEC).wait(
        reads.sql(
            SqlRead(
                workspace=ws,
                op="source_chunks",
                args={"project": project, "source": source, "start": start, "end": end},
            )
        ),
        "file_chunks",
    )
    if total == 0:
        where = f" in project {project!r}" if project else ""
        raise InputError(f"source: no source {source!r}{where}; list_sources shows what exists")
    return ChunkRows(source=source, start=start, end=end, total=total, records=tuple(records))


def format_chunks(rows: ChunkRows, max_chars: int = 8000) -> str:
    """Whole chunks in order while they fit the character budget; the rest named by index."""
    max_chars = clamp(max_chars, 1200, 12000)
    span = f"chunks {rows.start}-{rows.end} of {rows.total}"
    head = escape_field(f"{rows.source}: {span} (indexes 0-{rows.total - 1})")
    parts, used = [head], len(head)
    shown = 0
    for record in rows.records:
        line = escape_field(f"--- #{record.chunk_index} {record.id} ({record.project or '-'})")
        block = f"{line}\n{record.content}"
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
        source: Annotated[str, Field(description="source path as search shows it")],
        start: Annotated[int, Field(description="first chunk index, >= 0")] = 0,
        end: Annotated[int, Field(description="last chunk index (inclusive); -1 = start+9")] = -1,
        project: Annotated[str, Field(description="project, where two share a source")] = "",
        max_chars: Annotated[int, Field(description="response budget, 1200-12000")] = 8000,
        workspace: Annotated[str, Field(description="workspace; empty = active")] = "",
    ) -> str:
        """Read a file or ingested content in order: whole chunks start..end with the true
        total, under a character budget, and where to continue. Use after search or
        file_summary to read around a hit."""
        rows = await run_tool(chunk_rows, app.reads, source, start, end, project, workspace)
        return format_chunks(rows, max_chars)
