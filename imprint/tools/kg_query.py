"""kg_query: temporal facts (subject, predicate, object) with their ids and validity."""

from __future__ import annotations

import time
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from imprint.actors.messages import FactQuery
from imprint.store.records import Fact
from imprint.tools._app import READ, App, clamp, run_tool, tool
from imprint.tools._evidence import escape_field
from imprint.tools._reads import Deadline, Reads

__all__ = ["fact_rows", "format_facts", "register"]

READ_TIMEOUT_SEC = 30.0


def fact_rows(
    reads: Reads,
    subject: str = "",
    predicate: str = "",
    include_ended: bool = False,
    limit: int = 20,
    workspace: str = "",
) -> list[Fact]:
    """Facts matching subject and predicate (case-insensitive), newest first; limit 1-200."""
    limit = clamp(limit, 1, 200)
    ws = reads.open(workspace)
    query = FactQuery(
        workspace=ws,
        subject=subject.strip(),
        predicate=predicate.strip(),
        include_ended=include_ended,
        limit=limit,
    )
    return Deadline(READ_TIMEOUT_SEC).wait(reads.facts(query), "kg_query")


def _day(ts: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(ts))


def format_facts(facts: list[Fact]) -> str:
    if not facts:
        return "no facts match"
    lines = [f"{len(facts)} facts:"]
    for f in facts:
        valid = f"since {_day(f.valid_from)}" + (f", ended {_day(f.ended)}" if f.ended else "")
        source = f" [source: {f.source}]" if f.source else ""
        line = f"fact:{f.id} | {f.subject} | {f.predicate} | {f.object} | {valid}{source}"
        lines.append(escape_field(line))
    return "\n".join(lines)


def register(server: MCPServer, app: App) -> None:
    @tool(server, "kg_query", READ)
    async def kg_query(
        subject: Annotated[str, Field(description="only facts about this subject")] = "",
        predicate: Annotated[str, Field(description="only this relation")] = "",
        include_ended: Annotated[bool, Field(description="also facts that no longer hold")] = False,
        limit: Annotated[int, Field(description="facts to return, 1-200")] = 20,
        workspace: Annotated[str, Field(description="workspace; empty = active")] = "",
    ) -> str:
        """Facts stored with kg_edit, one per line: fact:id | subject | predicate | object |
        validity [source]. Current facts only unless include_ended."""
        facts = await run_tool(
            fact_rows, app.reads, subject, predicate, include_ended, limit, workspace
        )
        return format_facts(facts)
