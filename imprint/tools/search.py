"""search: the MCP tool over `imprint.reads.search`, and its `full` layout."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from imprint.reads.layout import one_line, superseded_note
from imprint.reads.search import (
    HINT,
    Mode,
    SearchArgs,
    SearchRows,
    format_search,
    meta_line,
    search_budget,
)
from imprint.reads.search import search as run_search
from imprint.tools._app import READ, App, run_tool, tool

__all__ = ["format_full", "register"]


def register(server: MCPServer, app: App) -> None:
    @tool(server, "search", READ)
    async def search(
        query: Annotated[str, Field(description="what to look for")],
        project: Annotated[str, Field(description="only this project")] = "",
        type: Annotated[str, Field(description="only this type: decision, note, ...")] = "",
        lang: Annotated[str, Field(description="only this language: python, ...")] = "",
        layer: Annotated[str, Field(description="only docs, source, test or config")] = "",
        limit: Annotated[int | None, Field(description="1-50; default 10 (search.limit)")] = None,
        mode: Annotated[Mode | None, Field(description="default hybrid (search.mode)")] = None,
        detail: Annotated[
            Literal["compact", "chunks", "full"],
            Field(description="chunks: a block per chunk; full: whole records"),
        ] = "compact",
        max_chars: Annotated[
            int | None, Field(description="1200-12000; default 4000 (search.max_chars)")
        ] = None,
        since: Annotated[str, Field(description="only since YYYY-MM-DD")] = "",
        include_superseded: Annotated[
            bool, Field(description="show superseded; default false")
        ] = False,
        workspace: str = "",
    ) -> str:
        """Search memories, ingested files and content; the first tool to reach for.
        Hybrid = vector + BM25. Returns numbered blocks, one per source, each
        `[n] id | project | source#chunk [+#more] | type | score` (memories: date before
        score) + excerpt, within max_chars; a last line counts hidden results. Read more:
        get_memory(id), file_chunks(source)."""
        args = SearchArgs(
            query=query,
            project=project,
            type=type,
            lang=lang,
            layer=layer,
            limit=limit,
            mode=mode,
            include_superseded=include_superseded,
            since=since,
            by_chunk=detail == "chunks",
        )

        def searched() -> SearchRows:
            # An interactive call, as a recall is: background work waits for its turn.
            with app.runtime.priority.interactive():
                return run_search(app.reads, args, workspace)

        rows = await run_tool(searched)
        budget = search_budget(app.runtime.config.search, max_chars)
        if detail == "full":
            return format_full(rows, budget)
        return format_search(rows, budget)


def format_full(rows: SearchRows, max_chars: int = 4000) -> str:
    """Whole records one after another while they fit (`max_chars` clamped by the caller,
    `search_budget`); the rest counted."""
    if not rows.hits:
        return format_search(rows, max_chars)
    head = f'search "{one_line(rows.query)[:200]}" ({rows.mode}, full): {len(rows.hits)} results'
    parts = [head]
    used = len(head)
    shown = 0
    note = superseded_note(rows.superseded)
    for i, hit in enumerate(rows.hits, start=1):
        meta = meta_line(hit.record, hit.score, hit.superseded_by, hit.also)
        block = f"[{i}] {meta}\n{hit.record.shown_text.strip()}"
        footer = len(rows.hits) - i
        reserve = (120 if footer else 0) + (len(note) + 4 if note else 0)
        if used + 2 + len(block) + reserve > max_chars:
            break
        parts.append(block)
        used += 2 + len(block)
        shown = i
    if shown == 0:
        return format_search(rows, max_chars)
    hidden = len(rows.hits) - shown
    if hidden:
        also = f"; {note}" if note else ""
        parts.append(f"({hidden} more results hidden by max_chars={max_chars}; {HINT}{also})")
    elif note:
        parts.append(f"({note})")
    return "\n\n".join(parts)[:max_chars]
