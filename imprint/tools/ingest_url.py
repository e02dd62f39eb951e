"""ingest_url: fetch one page over HTTP(S), turn HTML into text, index it by its URL.

The fetch and its bounds are `imprint.ingest.fetch`; the indexing is
`imprint.writes.content.fetch_and_index`. Fetches run on their own small thread limiter, so
they never hold the threads reads need.
"""

from __future__ import annotations

import functools
from typing import Annotated

import anyio
import anyio.to_thread
import structlog
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from imprint.actors._trace import new_request_id
from imprint.errors import ImprintError
from imprint.tools._app import REPLACE, App, tool
from imprint.writes.content import fetch_and_index

__all__ = ["register"]


def register(server: MCPServer, app: App) -> None:
    cfg = app.runtime.config.ingest
    # Fetches wait for a slot, not for a thread: the slot limiter holds waiting callers on
    # the event loop, and the thread limiter (the same size) keeps fetch threads off the
    # default limiter that every read tool runs on.
    slots = anyio.CapacityLimiter(cfg.url_concurrency)
    threads = anyio.CapacityLimiter(cfg.url_concurrency)

    @tool(server, "ingest_url", REPLACE.model_copy(update={"open_world_hint": True}))
    async def ingest_url(
        url: Annotated[str, Field(description="http:// or https://")],
        project: str = "",
        workspace: str = "",
    ) -> str:
        """Fetch a web page (HTML, text, Markdown; <= 5 MB, 10 s) and index its text under
        its URL, replacing an earlier copy; an unchanged page is skipped."""
        wait = app.runtime.config.ingest.url_timeout_sec
        try:
            with anyio.fail_after(wait):
                await slots.acquire()
        except TimeoutError as exc:
            msg = (
                f"url: {slots.total_tokens:g} fetches are already running and none finished "
                f"within {wait:g} s; try again later"
            )
            raise ToolError(msg) from exc
        try:
            call = functools.partial(fetch_and_index, app.writes, url, project, workspace)
            with structlog.contextvars.bound_contextvars(request_id=new_request_id()):
                return await anyio.to_thread.run_sync(call, limiter=threads)
        except ImprintError as exc:
            raise ToolError(str(exc)) from exc
        finally:
            slots.release()
