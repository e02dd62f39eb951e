"""ingest_content: index a named piece of text; the same name replaces what it held."""

from __future__ import annotations

import time
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from imprint.actors.read_messages import SourceEntryQuery
from imprint.errors import InputError
from imprint.ingest.pipeline import build_records
from imprint.reads.deadline import Deadline
from imprint.store.records import SourceEntry, SourceType, WriteBatch, check_project, content_sha
from imprint.tools._app import REPLACE, App, run_tool, tool

__all__ = ["MAX_CONTENT_CHARS", "index_text", "ingest_text", "register"]

MAX_CONTENT_CHARS = 2_000_000


def index_text(
    app: App,
    name: str,
    text: str,
    project: str,
    workspace: str,
    *,
    source_type: SourceType,
    lang: str = "",
    validators: str = "",
    argument: str = "content",
) -> tuple[int, bool]:
    """Replace the source `name` with the chunks of `text`; (chunks, changed).

    Refused (nothing written) past MAX_CONTENT_CHARS or ingest.max_chunks_per_source."""
    if len(text) > MAX_CONTENT_CHARS:
        raise InputError(
            f"{argument}: {name!r} holds {len(text)} characters; at most {MAX_CONTENT_CHARS}"
        )
    ws = app.runtime.resolve(workspace, create=True)
    cfg = app.runtime.config.ingest
    sha = content_sha(text)
    records = build_records(
        project,
        name,
        text,
        source_type=source_type,
        lang=lang or "text",
        mtime=time.time(),
        target=cfg.chunk_chars,
        overlap=cfg.chunk_overlap,
    )
    if len(records) > cfg.max_chunks_per_source:
        raise InputError(
            f"{argument}: {name!r} would make {len(records)} chunks; at most "
            f"{cfg.max_chunks_per_source} (ingest.max_chunks_per_source); nothing was stored"
        )
    entry = SourceEntry(
        project=project,
        source=name,
        source_type=source_type,
        mtime=time.time(),
        sha=sha,
        chunk_count=len(records),
        validators=validators,
    )
    app.write(ws, WriteBatch(upserts=tuple(records), set_sources=(entry,)))
    return len(records), True


def ingest_text(app: App, name: str, content: str, project: str = "", workspace: str = "") -> str:
    label = name.strip() if isinstance(name, str) else ""
    if not label or len(label) > 200 or not label.isprintable():
        raise InputError(
            "name: must be 1-200 printable characters on one line (it becomes the source)"
        )
    if not isinstance(content, str) or not content.strip():
        raise InputError("content: must be non-empty text")
    if len(content) > MAX_CONTENT_CHARS:
        raise InputError(f"content: {len(content)} characters; at most {MAX_CONTENT_CHARS}")
    check_project(project)
    ws = app.runtime.resolve(workspace, create=True)
    app.runtime.workspace(ws)
    entry = Deadline(30).wait(
        app.reads.ask(SourceEntryQuery(workspace=ws, project=project, source=label)),
        "ingest_content",
    )
    if entry is not None and entry.source_type != "content":
        raise InputError(
            f"name: {label!r} is already a {entry.source_type} source in project "
            f"{project or '-'!r}; ingest_content replaces only its own texts, choose another name"
        )
    lang = "markdown" if label.endswith((".md", ".markdown")) else ""
    chunks, _ = index_text(
        app,
        label,
        content,
        project,
        ws,
        source_type="content",
        lang=lang or ("markdown" if content.lstrip().startswith("#") else ""),
    )
    return f"ingested {label!r}: {chunks} chunks (replacing any earlier content of that name)"


def register(server: MCPServer, app: App) -> None:
    @tool(server, "ingest_content", REPLACE)
    async def ingest_content(
        name: Annotated[str, Field(description="becomes its source")],
        content: Annotated[str, Field(description="the text; Markdown split at headings")],
        project: str = "",
        workspace: str = "",
    ) -> str:
        """Index inline text (notes, a spec, a pasted page) for search and file_chunks.
        The same name again replaces it."""
        return await run_tool(ingest_text, app, name, content, project, workspace)
