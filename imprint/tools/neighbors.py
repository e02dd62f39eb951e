"""neighbors: the records nearest in meaning to one record."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from imprint.actors.messages import FetchRecords, Neighbors
from imprint.errors import InputError
from imprint.tools._app import READ, App, clamp, run_tool, tool
from imprint.tools._evidence import Block, render_blocks
from imprint.tools._reads import Deadline, Reads
from imprint.tools.get_memory import check_id
from imprint.tools.search import SearchHit, meta_line, normalize_max_chars

__all__ = ["format_neighbors", "neighbor_rows", "register"]

READ_TIMEOUT_SEC = 30.0


def neighbor_rows(reads: Reads, id: str, k: int = 10, workspace: str = "") -> list[SearchHit]:
    """Up to k (1-30) records nearest to the record `id`, best first."""
    rid = check_id(id)
    k = clamp(k, 1, 30)
    ws = reads.open(workspace)
    deadline = Deadline(READ_TIMEOUT_SEC)
    known = deadline.wait(reads.fetch(FetchRecords(workspace=ws, ids=(rid,))), "neighbors")
    if rid not in known:
        raise InputError(f"id: no record {rid!r} in workspace {ws!r}; use an id from search")
    hits = deadline.wait(reads.neighbors(Neighbors(workspace=ws, id=rid, k=k)), "neighbors")
    records = deadline.wait(
        reads.fetch(FetchRecords(workspace=ws, ids=tuple(h for h, _ in hits))), "neighbors"
    )
    return [SearchHit(record=records[h], score=s) for h, s in hits if h in records]


def format_neighbors(id: str, hits: list[SearchHit], max_chars: int = 4000) -> str:
    if not hits:
        return f"neighbors of {id}: none"
    blocks = [Block(meta=meta_line(h.record, h.score), content=h.record.content) for h in hits]
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
        with scores: to widen from a good hit."""
        hits = await run_tool(neighbor_rows, app.reads, id, k, workspace)
        return format_neighbors(id, hits, max_chars)
