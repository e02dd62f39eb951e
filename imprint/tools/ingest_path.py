"""ingest_path: index a file or folder under the allowed roots, reporting progress."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import anyio
import anyio.from_thread
from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from imprint.errors import InputError
from imprint.ingest.pipeline import IngestReport, Progress, ingest_path
from imprint.tools._app import REPLACE, App, run_tool, tool

__all__ = ["allowed_roots", "checked_path", "register"]


def allowed_roots(app: App) -> list[Path]:
    roots = app.runtime.config.ingest.allowed_roots
    base = [Path(r).expanduser().resolve() for r in roots] if roots else [app.cwd]
    return base + app.extra_roots


def checked_path(app: App, path: str) -> Path:
    if not isinstance(path, str) or not path.strip():
        raise InputError("path: must be a file or folder path")
    if "\x00" in path:
        raise InputError(f"path: {path!r} holds a NUL character; no file name can")
    candidate = Path(path).expanduser()
    target = (candidate if candidate.is_absolute() else app.cwd / candidate).resolve()
    roots = allowed_roots(app)
    if not any(target == r or target.is_relative_to(r) for r in roots):
        allowed = ", ".join(str(r) for r in roots)
        raise InputError(
            f"path: {path!r} is outside the allowed roots ({allowed}); "
            "set ingest.allowed_roots to allow more"
        )
    return target


def ingest_checked(
    app: App, path: str, project: str, workspace: str, progress: Progress | None
) -> IngestReport:
    return ingest_path(
        app.runtime,
        checked_path(app, path),
        project=project,
        workspace=workspace,
        progress=progress,
        roots=allowed_roots(app),
    )


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

        report = await run_tool(ingest_checked, app, path, project, workspace, progress)
        return report.summary()
