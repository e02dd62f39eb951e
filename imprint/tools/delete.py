"""delete: remove one memory by id, or every chunk of one source."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from imprint.actors.read_messages import FetchRecords, SourceChunks
from imprint.errors import InputError
from imprint.reads.deadline import Deadline
from imprint.reads.memory import check_id
from imprint.store.records import WriteBatch
from imprint.tools._app import REPLACE, App, run_tool, tool

__all__ = ["delete_records", "register"]


def delete_records(
    app: App, id: str = "", source: str = "", project: str = "", workspace: str = ""
) -> str:
    if bool(id) == bool(source):
        raise InputError("id, source: give exactly one (an id from search, or a source path)")
    ws = app.reads.open(workspace)
    deadline = Deadline(60.0)
    if id:
        rid = check_id(id)
        found = deadline.wait(app.reads.ask(FetchRecords(workspace=ws, ids=(rid,))), "delete")
        if rid not in found:
            raise InputError(f"id: no record {rid!r} in workspace {ws!r}")
        record = found[rid]
        if record.source_type != "memory" and record.chunk_count > 1:
            raise InputError(
                f"id: {rid!r} is chunk {record.chunk_index} of source {record.source!r}; "
                "delete the whole source with source= instead"
            )
        if record.source_type == "memory":
            app.write(ws, WriteBatch(delete_ids=(rid,)), create=False)
        else:
            app.write(ws, WriteBatch(drop_sources=((record.project, record.source),)), create=False)
        return f"deleted {rid}"
    records, total = deadline.wait(
        app.reads.ask(SourceChunks(workspace=ws, project=project, source=source)),
        "delete",
    )
    if total == 0:
        raise InputError(f"source: no source {source!r}; list_sources shows what exists")
    projects = sorted({r.project for r in records})
    if len(projects) > 1:
        raise InputError(
            f"project: source {source!r} exists in projects {', '.join(projects)}; name one"
        )
    app.write(ws, WriteBatch(drop_sources=((projects[0], source),)), create=False)
    return f"deleted source {source} ({total} chunks)"


def register(server: MCPServer, app: App) -> None:
    @tool(server, "delete", REPLACE)
    async def delete(
        id: Annotated[str, Field(description="a memory id")] = "",
        source: Annotated[str, Field(description="or a source")] = "",
        project: Annotated[str, Field(description="the source's, if ambiguous")] = "",
        workspace: str = "",
    ) -> str:
        """Permanently delete one memory (id) or one source with all its chunks (source).
        Give exactly one."""
        return await run_tool(delete_records, app, id, source, project, workspace)
