"""recall: the MCP tool over `imprint.recall.respond`."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from imprint.recall.respond import recall_text
from imprint.tools._app import READ, App, run_tool, tool

__all__ = ["register"]


def register(server: MCPServer, app: App) -> None:
    @tool(server, "recall", READ)
    async def recall(
        question: Annotated[str, Field(description="the whole question, in words")],
        plan: Annotated[
            list[dict[str, Any]] | str | None,
            Field(description="up to 8 read steps {tool, args}; omit for a plain search"),
        ] = None,
        max_chars: Annotated[int, Field(description="budget for everything, 1200-12000")] = 4000,
        condense: Annotated[
            bool, Field(description="let a local model condense (only when one is on)")
        ] = True,
        workspace: Annotated[str, Field(description="workspace; empty = active")] = "",
    ) -> str:
        """Answer a multi-part question in one call instead of several. Give a plan of up
        to 8 independent read steps; they run at the same time and their results merge
        (duplicates once) into one response under max_chars: a line per step (its count
        or its error), then numbered evidence blocks like search's (a search step shows one
        block per file, its other chunks named as +#2,#5); results the budget hides are
        listed as "[n] source#chunk score" lines, to fetch with file_chunks or get_memory.
        Step tools: search,
        get_memory, neighbors, file_chunks, file_summary, list_sources, kg_query, with the
        same arguments as those tools minus workspace and max_chars. Steps cannot use each
        other's results. Without a plan this is exactly search(question).

        Example plan: [{"tool": "search", "args": {"query": "how is ingest serialized",
        "limit": 5}}, {"tool": "kg_query", "args": {"subject": "imprint"}}]"""
        return await run_tool(
            recall_text,
            app.reads,
            question,
            plan,
            max_chars,
            condense,
            workspace,
            timeout_sec=app.runtime.config.recall.step_timeout_sec,
            cwd=app.cwd,
        )
