"""The session briefing over MCP: a resource per project (`imprint://briefing/{project}`)
and a prompt (`briefing`, a slash command in clients that show prompts), each the text
the session-start hook adds (`imprint.reads.briefing`). The tools are not touched."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from mcp.server.mcpserver import MCPServer

if TYPE_CHECKING:
    from imprint.actors.lifecycle import Runtime

__all__ = ["BRIEFING_URI", "register_briefing"]

BRIEFING_URI = "imprint://briefing/{project}"


def _briefing(runtime: Runtime, project: str, cwd: Path | None) -> str:
    from imprint.reads.briefing import briefing_text, project_for
    from imprint.reads.gateway import ActorReads
    from imprint.store.records import check_project

    reads = ActorReads(runtime)
    ws = reads.open("")
    with reads.deadline() as deadline:
        name = check_project(project) or project_for(
            reads, ws, cwd or Path.cwd(), deadline, runtime.data_dir
        )
        if not name:
            return "Imprint knows no project for this folder; name one: briefing(project)."
        text = briefing_text(reads, ws, name, runtime.config.hooks.context_chars, deadline)
    return text or (
        f"Imprint holds no decisions, bugs, preferences, facts or sessions for project {name!r}."
    )


def register_briefing(
    server: MCPServer, runtime: Runtime | Callable[[], Runtime], cwd: Path | None
) -> None:
    """Register the briefing resource template and prompt (neither starts the runtime)."""

    def text(project: str) -> str:
        started = runtime() if callable(runtime) else runtime
        return _briefing(started, project, cwd)

    @server.resource(
        BRIEFING_URI,
        name="briefing",
        title="Imprint session briefing",
        description="A project's newest decisions, bugs with their fixes, preferences, "
        "facts that hold now and last sessions, within hooks.context_chars.",
        mime_type="text/plain",
    )
    async def briefing_resource(project: str) -> str:
        return await anyio.to_thread.run_sync(text, project)

    @server.prompt(
        name="briefing",
        title="Imprint session briefing",
        description="What Imprint remembers of a project (default: this folder's): newest "
        "decisions, bugs and fixes, preferences, facts and last sessions.",
    )
    async def briefing_prompt(project: str = "") -> str:
        return await anyio.to_thread.run_sync(text, project)
