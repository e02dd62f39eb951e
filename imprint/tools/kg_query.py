"""kg_query: temporal facts (subject, predicate, object) with their ids and validity."""

from __future__ import annotations

import time
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from imprint.reads.facts import KgQueryArgs, fact_rows
from imprint.reads.layout import escape_field
from imprint.store.records import Fact
from imprint.tools._app import READ, App, read_tool, tool

__all__ = ["format_facts", "register"]


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
        subject: Annotated[str, Field(description="only this subject")] = "",
        predicate: Annotated[str, Field(description="only this relation")] = "",
        include_ended: Annotated[bool, Field(description="also ended facts")] = False,
        limit: Annotated[int, Field(description="1-200")] = 20,
        workspace: str = "",
    ) -> str:
        """Facts from kg_edit, a line each: fact:id | subject | predicate | object |
        validity [source]. Current ones unless include_ended."""
        args = KgQueryArgs(
            subject=subject, predicate=predicate, include_ended=include_ended, limit=limit
        )
        facts = await read_tool(app, fact_rows, args, workspace)
        return format_facts(facts)
