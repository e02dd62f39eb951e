"""The team server's tools: the same names and arguments as the local server's read tools,
store, delete, kg_edit, status and recall (without the model path), answered from the storage
seam (`reads.on_store`, `writes.on_store`) for the caller's workspace.

Which workspace a call reaches, and whether it may write, is the server's business (the
token's tenancy, `server.team_auth`): each tool asks `TeamAccess.open` for the store, once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any, Protocol

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from imprint.reads import on_store as r
from imprint.recall.on_store import recall_on_store
from imprint.store.seam import MemoryStore
from imprint.tools._app import READ, REPLACE, WRITE, run_tool, tool
from imprint.writes import on_store as w

__all__ = ["WRITE_TOOLS", "Opened", "TeamAccess", "register_team"]

# The tools that change a workspace: the server asks for `imprint:write` before they run.
WRITE_TOOLS = frozenset({"store", "delete", "kg_edit"})

Workspace = Annotated[
    str, Field(description="user:<you> (default) or team:<name>, one of your workspaces")
]


@dataclass(frozen=True)
class Opened:
    store: MemoryStore
    actor: str  # who the write is recorded as
    redact: bool  # whether writes here are redacted first (`redact.*`)
    workspaces: tuple[str, ...]  # every workspace this caller reaches


# A tool's call: the caller's store opened (for writing or not), then `fn` run on it.
Run = Callable[[Context[Any, Any], str, bool, Callable[[Opened], str]], Awaitable[str]]


class TeamAccess(Protocol):
    embed: r.Embed

    def open(self, ctx: Context[Any, Any], workspace: str, *, write: bool) -> Opened: ...


def register_team(server: MCPServer, access: TeamAccess) -> None:
    async def run(
        ctx: Context[Any, Any], workspace: str, write: bool, fn: Callable[[Opened], str]
    ) -> str:
        opened = access.open(ctx, workspace, write=write)
        return await run_tool(fn, opened)

    # In this order in tools/list: the searches, the other reads, the writes.
    _search_tools(server, access, run)
    _read_tools(server, run)
    _write_tools(server, run)


def _search_tools(server: MCPServer, access: TeamAccess, run: Run) -> None:
    @tool(server, "search", READ)
    async def search(
        query: str,
        ctx: Context[Any, Any],
        project: str = "",
        type: str = "",
        lang: str = "",
        layer: str = "",
        limit: Annotated[int, Field(ge=1, le=50)] = 10,
        mode: str = "hybrid",
        include_superseded: bool = False,
        max_chars: Annotated[int, Field(ge=1200, le=12000)] = 4000,
        workspace: Workspace = "",
    ) -> str:
        """Hybrid search (meaning and exact words) of one of your workspaces: numbered blocks
        (id | project | source#chunk | type | date | score) with excerpts, within max_chars."""
        return await run(
            ctx,
            workspace,
            False,
            lambda o: r.search_store_text(
                o.store,
                access.embed,
                query,
                max_chars,
                project=project,
                type=type,
                lang=lang,
                layer=layer,
                limit=limit,
                mode=mode,
                include_superseded=include_superseded,
            ),
        )

    @tool(server, "recall", READ)
    async def recall(
        question: str,
        ctx: Context[Any, Any],
        plan: list[dict[str, Any]] | str | None = None,
        max_chars: Annotated[int, Field(ge=1200, le=12000)] = 4000,
        condense: bool = True,
        workspace: Workspace = "",
    ) -> str:
        """Answer a multi-part question from one of your workspaces in one call. Without a
        plan: the evidence of search(question). With plan, a list of up to 8 steps
        {"tool": <a read tool>, "args": {...}} over search, get_memory, neighbors,
        file_chunks, file_summary, list_sources, kg_query: each step's answer within an even
        share of max_chars. (The team server runs no model: condense is ignored.)"""
        return await run(
            ctx,
            workspace,
            False,
            lambda o: recall_on_store(o.store, access.embed, question, plan, max_chars),
        )


def _read_tools(server: MCPServer, run: Run) -> None:
    @tool(server, "get_memory", READ)
    async def get_memory(id: str, ctx: Context[Any, Any], workspace: Workspace = "") -> str:
        """The whole record with this id, its tags, and the memory that replaced it."""
        return await run(ctx, workspace, False, lambda o: r.memory_text(o.store, id))

    @tool(server, "neighbors", READ)
    async def neighbors(
        id: str,
        ctx: Context[Any, Any],
        k: Annotated[int, Field(ge=1, le=30)] = 10,
        max_chars: Annotated[int, Field(ge=1200, le=12000)] = 4000,
        workspace: Workspace = "",
    ) -> str:
        """The records nearest in meaning to one record."""
        return await run(
            ctx, workspace, False, lambda o: r.neighbors_text(o.store, id, k, max_chars)
        )

    @tool(server, "file_chunks", READ)
    async def file_chunks(
        source: str,
        ctx: Context[Any, Any],
        start: Annotated[int, Field(ge=0)] = 0,
        end: Annotated[int, Field(ge=0)] = 5,
        project: str = "",
        workspace: Workspace = "",
    ) -> str:
        """Chunks start..end of one source, with its true chunk count."""
        return await run(
            ctx, workspace, False, lambda o: r.chunks_text(o.store, source, start, end, project)
        )

    @tool(server, "file_summary", READ)
    async def file_summary(
        source: str, ctx: Context[Any, Any], project: str = "", workspace: Workspace = ""
    ) -> str:
        """One source's chunk count, tags, mtime and a preview."""
        return await run(ctx, workspace, False, lambda o: r.summary_text(o.store, source, project))

    @tool(server, "list_sources", READ)
    async def list_sources(
        ctx: Context[Any, Any],
        project: str = "",
        lang: str = "",
        layer: str = "",
        limit: Annotated[int, Field(ge=1, le=200)] = 50,
        workspace: Workspace = "",
    ) -> str:
        """The sources of one of your workspaces with their chunk counts."""
        return await run(
            ctx, workspace, False, lambda o: r.sources_text(o.store, project, lang, layer, limit)
        )

    @tool(server, "kg_query", READ)
    async def kg_query(
        ctx: Context[Any, Any],
        subject: str = "",
        predicate: str = "",
        include_ended: bool = False,
        limit: Annotated[int, Field(ge=1, le=200)] = 20,
        workspace: Workspace = "",
    ) -> str:
        """Facts (subject | predicate | object) with their ids, validity and source."""
        return await run(
            ctx,
            workspace,
            False,
            lambda o: r.facts_text(o.store, subject, predicate, include_ended, limit),
        )

    @tool(server, "status", READ)
    async def status(ctx: Context[Any, Any], workspace: Workspace = "") -> str:
        """Record counts per project of one of your workspaces, and the workspaces you reach."""
        return await run(ctx, workspace, False, lambda o: r.status_text(o.store, o.workspaces))


def _write_tools(server: MCPServer, run: Run) -> None:
    @tool(server, "store", WRITE)
    async def store(
        content: str,
        ctx: Context[Any, Any],
        project: str = "",
        type: str = "note",
        domains: list[str] | None = None,
        topics: list[str] | None = None,
        supersedes: list[str] | None = None,
        workspace: Workspace = "",
    ) -> str:
        """Store a memory (decision, finding, pattern...) in one of your workspaces; the same
        text again gives the same id. supersedes: ids of memories it replaces."""
        return await run(
            ctx,
            workspace,
            True,
            lambda o: w.store_on_store(
                o.store,
                content,
                project,
                type,
                domains,
                topics,
                supersedes,
                actor=o.actor,
                redact=o.redact,
            ),
        )

    @tool(server, "delete", REPLACE)
    async def delete(
        ctx: Context[Any, Any],
        id: Annotated[str, Field(description="a memory id")] = "",
        source: Annotated[str, Field(description="or a source")] = "",
        project: Annotated[str, Field(description="the source's, if ambiguous")] = "",
        workspace: Workspace = "",
    ) -> str:
        """Permanently delete one memory (id) or one source with all its chunks (source) from
        one of your workspaces. Give exactly one."""
        return await run(
            ctx,
            workspace,
            True,
            lambda o: w.delete_on_store(o.store, id, source, project, actor=o.actor),
        )

    @tool(server, "kg_edit", WRITE)
    async def kg_edit(
        action: str,
        ctx: Context[Any, Any],
        subject: str = "",
        predicate: str = "",
        object: str = "",
        fact_id: str = "",
        source: str = "",
        workspace: Workspace = "",
    ) -> str:
        """Add a fact (action=add, subject, predicate, object) or end one (action=end,
        fact_id) in one of your workspaces."""
        return await run(
            ctx,
            workspace,
            True,
            lambda o: w.edit_facts_on_store(
                o.store,
                action,
                subject,
                predicate,
                object,
                fact_id,
                source,
                actor=o.actor,
                redact=o.redact,
            ),
        )
