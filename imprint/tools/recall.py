"""recall: the MCP tool over `imprint.recall.respond`."""

from __future__ import annotations

import time
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from imprint.recall.respond import RecallArgs, recall_reserve, recall_text
from imprint.tools._app import READ, App, run_tool, tool

__all__ = ["register"]


def register(server: MCPServer, app: App) -> None:
    @tool(server, "recall", READ)
    async def recall(
        question: Annotated[str, Field(description="the whole question")],
        plan: Annotated[
            list[dict[str, Any]] | str | None,
            Field(description="<= 8 steps {tool, args}; omit: plain search"),
        ] = None,
        max_chars: Annotated[
            int | None, Field(description="1200-12000; default 4000 (search.max_chars)")
        ] = None,
        condense: Annotated[bool, Field(description="let a local model condense, if on")] = True,
        workspace: str = "",
    ) -> str:
        """Answer a multi-part question in one call. Plan steps run at once and merge under
        max_chars: a line per step, numbered blocks, then "[n] source#chunk score" lines
        for what the budget hid. Step tools: search, get_memory, neighbors, file_chunks,
        file_summary, list_sources, kg_query, their arguments minus workspace and
        max_chars; steps are independent. Without a plan (and
        no model): exactly search(question). With recall.llm on, a local model may plan and
        answer citing [n]: a pointer to the cited evidence, not a fact; verify it.
        Plan: [{"tool": "search", "args": {"query": "ingest order"}},
        {"tool": "kg_query", "args": {"subject": "x"}}]"""
        args = RecallArgs(question=question, plan=plan, max_chars=max_chars, condense=condense)
        returned: list[float] = []

        def answered() -> str:
            try:
                return recall_text(
                    app.reads,
                    args,
                    workspace,
                    timeout_sec=app.runtime.config.recall.step_timeout_sec,
                    cwd=app.cwd,
                )
            finally:
                returned.append(time.monotonic())

        try:
            return await run_tool(answered)
        finally:
            if returned:  # the hand-back to the event loop is part of every recall's tail
                recall_reserve(app.runtime).transport.observe(time.monotonic() - returned[0])
