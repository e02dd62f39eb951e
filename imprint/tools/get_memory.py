"""get_memory: one whole record, its tags, and where its source is on this computer."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, ConfigDict, Field

from imprint.actors.messages import FetchRecords, SqlRead
from imprint.errors import InputError
from imprint.store.records import Record
from imprint.tools._app import READ, App, run_tool, tool
from imprint.tools._evidence import escape_field
from imprint.tools._reads import Deadline, Reads
from imprint.types import MemoryId

__all__ = ["MemoryRow", "format_memory", "memory_row", "register"]

READ_TIMEOUT_SEC = 30.0


class MemoryRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    record: Record
    path_context: dict[str, Any]


def check_id(value: str, argument: str = "id") -> MemoryId:
    text = value.strip() if isinstance(value, str) else ""
    if not text or len(text) > 64 or not all(c.isalnum() or c in "-_:" for c in text):
        raise InputError(f"{argument}: {value!r} is not a record id; use an id from search")
    return MemoryId(text)


def memory_row(reads: Reads, id: str, workspace: str = "", cwd: Path | None = None) -> MemoryRow:
    """The record with this id, or an error naming the id."""
    rid = check_id(id)
    ws = reads.open(workspace)
    deadline = Deadline(READ_TIMEOUT_SEC)
    found = deadline.wait(reads.fetch(FetchRecords(workspace=ws, ids=(rid,))), "get_memory")
    if rid not in found:
        raise InputError(f"id: no record {rid!r} in workspace {ws!r}; use an id from search")
    record = found[rid]
    here = (cwd or Path.cwd()).resolve()
    context: dict[str, Any] = {"working_directory": str(here), "source_exists_here": False}
    if record.source_type == "file" and record.source:
        root = deadline.wait(
            reads.sql(
                SqlRead(
                    workspace=ws,
                    op="source_root",
                    args={"project": record.project, "source": record.source},
                )
            ),
            "get_memory",
        )
        candidates = [Path(root) / record.source] if root else []
        candidates.append(here / record.source)
        existing = next((p for p in candidates if p.is_file()), None)
        context["source_exists_here"] = existing is not None
        if existing is not None:
            context["path"] = str(existing)
    return MemoryRow(record=record, path_context=context)


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
        "path_context: " + " ".join(f"{k}={v}" for k, v in row.path_context.items()),
    ]
    return "\n".join([*map(escape_field, header), "", r.content])


def register(server: MCPServer, app: App) -> None:
    @tool(server, "get_memory", READ)
    async def get_memory(
        id: Annotated[str, Field(description="a record id from search or another tool")],
        workspace: Annotated[str, Field(description="workspace; empty = active")] = "",
    ) -> str:
        """The whole record for one id: full content, project, source and chunk, type, tags,
        and path_context (this server's working directory and whether the source file
        exists on this computer). Use after search when an excerpt is not enough."""
        row = await run_tool(memory_row, app.reads, id, workspace, app.cwd)
        return format_memory(row)
