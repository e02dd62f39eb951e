"""kg_edit: add a temporal fact, or end one that no longer holds."""

from __future__ import annotations

import time
from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from imprint.actors.read_messages import FactById, FactQuery
from imprint.errors import InputError
from imprint.reads.deadline import Deadline
from imprint.store.records import Fact, WriteBatch, make_id
from imprint.tools._app import WRITE, App, run_tool, tool

__all__ = ["edit_facts", "register"]


def _part(value: str, argument: str) -> str:
    text = " ".join(value.split()) if isinstance(value, str) else ""
    if not text or len(text) > 300:
        raise InputError(f"{argument}: must be 1-300 characters")
    return text


def edit_facts(
    app: App,
    action: str,
    subject: str = "",
    predicate: str = "",
    object: str = "",
    fact_id: str = "",
    source: str = "",
    workspace: str = "",
) -> str:
    if action not in ("add", "end"):
        raise InputError(f"action: {action!r} is not allowed; one of add, end")
    ws = app.runtime.resolve(workspace, create=action == "add")
    app.runtime.workspace(ws)
    deadline = Deadline(60.0)
    if action == "add":
        s, p, o = _part(subject, "subject"), _part(predicate, "predicate"), _part(object, "object")
        current = deadline.wait(
            app.reads.ask(FactQuery(workspace=ws, subject=s, predicate=p, limit=200)), "kg_edit"
        )
        for fact in current:
            if fact.object.lower() == o.lower():
                return f"unchanged: fact:{fact.id} already holds"
        now = time.time()
        fact = Fact(
            id=make_id("fact", s.lower(), p.lower(), o.lower(), now)[:12],
            subject=s,
            predicate=p,
            object=o,
            valid_from=now,
            source=source.strip()[:300],
        )
        app.write(ws, WriteBatch(add_facts=(fact,)))
        return f"added fact:{fact.id} ({s} | {p} | {o})"
    fid = fact_id.removeprefix("fact:").strip() if isinstance(fact_id, str) else ""
    if not fid:
        raise InputError("fact_id: required to end a fact; kg_query shows fact ids")
    found = deadline.wait(app.reads.ask(FactById(workspace=ws, fact_id=fid)), "kg_edit")
    if found is None:
        raise InputError(f"fact_id: no fact {fid!r} in workspace {ws!r}")
    fact = found
    if fact.ended is not None:
        raise InputError(f"fact_id: fact:{fid} has already ended")
    app.write(ws, WriteBatch(end_facts=((fid, time.time()),)))
    return f"ended fact:{fid} ({fact.subject} | {fact.predicate} | {fact.object})"


def register(server: MCPServer, app: App) -> None:
    @tool(server, "kg_edit", WRITE)
    async def kg_edit(
        action: Literal["add", "end"],
        subject: Annotated[str, Field(description="add: what it is about")] = "",
        predicate: Annotated[str, Field(description="add: relation (uses, ...)")] = "",
        object: Annotated[str, Field(description="add: the value")] = "",
        fact_id: Annotated[str, Field(description="end: its id from kg_query")] = "",
        source: Annotated[str, Field(description="add: where it is known from")] = "",
        workspace: str = "",
    ) -> str:
        """Add a fact that holds from now on (subject, predicate, object), or end one that
        stopped holding (fact_id). Ended facts stay queryable."""
        return await run_tool(
            edit_facts, app, action, subject, predicate, object, fact_id, source, workspace
        )
