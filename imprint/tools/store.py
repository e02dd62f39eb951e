"""store: keep a decision, finding or note as a memory."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from imprint.actors.read_messages import FetchRecords
from imprint.errors import InputError
from imprint.ingest.tags import rule_tags
from imprint.reads.deadline import Deadline
from imprint.store.records import (
    RECORD_TYPES,
    Record,
    WriteBatch,
    check_project,
    check_tag,
    content_sha,
    make_id,
)
from imprint.tagging import model_tags
from imprint.tools._app import WRITE, App, run_tool, tool
from imprint.types import MemoryId

__all__ = ["MAX_MEMORY_CHARS", "register", "store_memory"]

MAX_MEMORY_CHARS = 8_000


def _words(values: list[str], argument: str) -> tuple[str, ...]:
    out = []
    for v in values:
        v = v.strip().lower() if isinstance(v, str) else ""
        if not v or len(v) > 40:
            raise InputError(f"{argument}: {v!r} is not allowed; 1-40 characters each")
        out.append(check_tag(v, argument))
    if len(out) > 10:
        raise InputError(f"{argument}: {len(out)} given; at most 10")
    return tuple(dict.fromkeys(out))


def store_memory(
    app: App,
    content: str,
    project: str = "",
    type: str = "note",
    domains: list[str] | None = None,
    topics: list[str] | None = None,
    workspace: str = "",
) -> MemoryId:
    """Store one memory; the same content in the same project is stored once."""
    text = content.strip() if isinstance(content, str) else ""
    if not text:
        raise InputError("content: must be non-empty text")
    if len(text) > MAX_MEMORY_CHARS:
        raise InputError(
            f"content: {len(text)} characters; at most {MAX_MEMORY_CHARS} "
            "(use ingest_content for documents)"
        )
    if type not in RECORD_TYPES:
        raise InputError(f"type: {type!r} is not allowed; one of {', '.join(RECORD_TYPES)}")
    check_project(project)
    rid = make_id("memory", project, content_sha(text))
    ws = app.runtime.resolve(workspace, create=True)
    app.runtime.workspace(ws)
    existing = Deadline(30).wait(app.reads.ask(FetchRecords(workspace=ws, ids=(rid,))), "store")
    if rid in existing:
        return rid
    given_domains = _words(domains or [], "domains")
    given_topics = _words(topics or [], "topics")
    rules = rule_tags("memory.txt", text)
    model = model_tags(app.runtime, text)
    record = Record(
        id=rid,
        content=text,
        project=project,
        source="",
        source_type="memory",
        # What the caller said wins; the model fills what it left open; rules last.
        type=type if type != "note" or model is None else model.type,
        lang="",
        layer="",
        kind="memory",
        domains=given_domains or (model.domains if model else ()),
        topics=given_topics or (model.topics if model else tuple(rules["topics"])),  # type: ignore[arg-type]
        content_sha=content_sha(text),
        tagged_by="model" if model is not None else "rules",
    )
    app.write(ws, WriteBatch(upserts=(record,)))
    return record.id


def register(server: MCPServer, app: App) -> None:
    @tool(server, "store", WRITE)
    async def store(
        content: Annotated[str, Field(description="self-contained, <= 8000 chars")],
        project: Annotated[str, Field(description="letters, digits, . _ - /")] = "",
        type: Annotated[
            str,
            Field(
                description="decision, pattern, finding, bug, preference, architecture, "
                "milestone or note"
            ),
        ] = "note",
        domains: Annotated[list[str] | None, Field(description="broad areas, <=10")] = None,
        topics: Annotated[list[str] | None, Field(description="specific topics, <=10")] = None,
        workspace: str = "",
    ) -> str:
        """Remember for later sessions a decision and why, a finding, a bug and its fix, a
        preference. Returns the id; the same content in the same project changes nothing."""
        rid = await run_tool(store_memory, app, content, project, type, domains, topics, workspace)
        return f"stored {rid}"
