"""neighbors: the records nearest in meaning to one record."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from imprint.reads.layout import Block, render_blocks
from imprint.reads.neighbors import NeighborsArgs, neighbor_rows
from imprint.reads.search import SearchHit, meta_line, normalize_max_chars
from imprint.tools._app import READ, App, read_tool, tool

__all__ = ["format_neighbors", "register"]


def format_neighbors(id: str, hits: list[SearchHit], max_chars: int = 4000) -> str:
    if not hits:
        return f"neighbors of {id}: none"
    blocks = [Block(meta=meta_line(h.record, h.score), content=h.record.shown_text) for h in hits]
    return render_blocks(
        [f"neighbors of {id}: {len(hits)} records"],
        blocks,
        normalize_max_chars(max_chars),
        hint="raise max_chars (up to 12000) or lower k",
    )


def register(server: MCPServer, app: App) -> None:
    @tool(server, "neighbors", READ)
    async def neighbors(
        id: Annotated[str, Field(description="a record id")],
        k: Annotated[int, Field(description="1-30")] = 10,
        max_chars: Annotated[int, Field(description="chars, 1200-12000")] = 4000,
        workspace: str = "",
    ) -> str:
        """Records nearest in meaning to one record (itself excluded), as numbered blocks
        with scores."""
        hits = await read_tool(app, neighbor_rows, NeighborsArgs(id=id, k=k), workspace)
        return format_neighbors(id, hits, max_chars)
