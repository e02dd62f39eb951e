"""recall: one round trip for a multi-part question.

With a plan, its steps (reads of the 7 evidence tools) run concurrently under one deadline
and their results merge into one budgeted response. Without a plan, recall is exactly the
compact search for the question. The model path (planning and condensing with a local
model) plugs in at `recall_text` when it exists; `condense` is accepted for it now.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from imprint.actors.recall import run_plan
from imprint.errors import InputError
from imprint.recall.evidence import StepResult, merge
from imprint.recall.plan import parse_plan
from imprint.tools._app import READ, App, run_tool, tool
from imprint.tools._evidence import Block, one_line, render_blocks
from imprint.tools._reads import Reads
from imprint.tools.search import format_search, normalize_max_chars, search_rows

__all__ = ["format_recall", "recall_text", "register"]

HINT = "raise max_chars (up to 12000) or narrow the steps"


def format_recall(question: str, results: list[StepResult], max_chars: int) -> str:
    """A line per step, then the merged evidence as numbered blocks under one budget."""
    items = merge(results)
    shown_q = one_line(question)
    shown_q = shown_q if len(shown_q) <= 160 else shown_q[:159] + "…"
    prelude = [f'recall "{shown_q}": {len(results)} steps, {len(items)} records']
    for r in results:
        label = r.label if len(r.label) <= 160 else r.label[:159] + "…"
        status = r.detail if r.outcome == "ok" else f"{r.outcome}: {r.detail}"
        prelude.append(f"step {r.index} {label}: {status}")
    blocks = [Block(meta=i.meta, content=i.content) for i in items]
    if not blocks:
        return "\n".join(prelude)[:max_chars]
    return render_blocks(prelude, blocks, max_chars, hint=HINT)


def recall_text(
    reads: Reads,
    question: str,
    plan: Any = None,
    max_chars: int = 4000,
    condense: bool = True,
    workspace: str = "",
    *,
    timeout_sec: float = 10.0,
    cwd: Path | None = None,
) -> str:
    max_chars = normalize_max_chars(max_chars)
    if not isinstance(question, str) or not question.strip():
        raise InputError("question: must be non-empty text")
    if plan is None or plan == "" or plan == []:
        return format_search(search_rows(reads, question, workspace=workspace), max_chars)
    steps = parse_plan(plan)  # rejects a bad plan before anything runs
    ws = reads.open(workspace)
    recall_id = uuid.uuid4().hex[:12]
    results = run_plan(
        reads, ws, steps, timeout_sec, recall_id=recall_id, cwd=str(cwd) if cwd else ""
    )
    return format_recall(question, results, max_chars)


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
        or its error), then numbered evidence blocks like search's. Step tools: search,
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
