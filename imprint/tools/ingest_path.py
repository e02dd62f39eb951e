"""ingest_path: index a file or folder under the allowed roots, reporting progress."""

from __future__ import annotations

from typing import Annotated

import anyio
import anyio.from_thread
from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from imprint.tools._app import REPLACE, App, run_tool, tool
from imprint.writes.content import ingest_checked

__all__ = ["register"]


def register(server: MCPServer, app: App) -> None:
    @tool(server, "ingest_path", REPLACE)
    async def ingest_path_tool(
        ctx: Context,
        path: Annotated[str, Field(description="relative to the server's cwd")],
        project: Annotated[str, Field(description="default: the folder's name")] = "",
        workspace: str = "",
    ) -> str:
        """Index a file or folder of docs and code (.gitignore respected): unchanged files
        skipped, changed replaced, deleted removed. Only under ingest.allowed_roots
        (default: the server's cwd). Returns counts."""

        def progress(done: int, total: int, source: str) -> None:
            anyio.from_thread.run(ctx.report_progress, done, total, source)

        report = await run_tool(ingest_checked, app.writes, path, project, workspace, progress)
        return report.summary()
