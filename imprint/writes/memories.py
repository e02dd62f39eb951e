"""Memories: store one (a decision, a finding, a note), delete one or a whole source."""

from __future__ import annotations

from imprint.actors.read_messages import FetchRecords, SourceChunks
from imprint.errors import InputError
from imprint.ingest.tags import rule_tags
from imprint.reads.deadline import Deadline
from imprint.reads.memory import check_id
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
from imprint.types import MemoryId
from imprint.writes.gateway import Writes

__all__ = ["MAX_MEMORY_CHARS", "delete_records", "store_memory"]

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
    writes: Writes,
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
    ws = writes.open(workspace, create=True)
    existing = Deadline(30).wait(writes.reads.ask(FetchRecords(workspace=ws, ids=(rid,))), "store")
    if rid in existing:
        return rid
    given_domains = _words(domains or [], "domains")
    given_topics = _words(topics or [], "topics")
    rules = rule_tags("memory.txt", text)
    model = model_tags(writes.runtime, text)
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
    writes.write(ws, WriteBatch(upserts=(record,)))
    return record.id


def delete_records(
    writes: Writes, id: str = "", source: str = "", project: str = "", workspace: str = ""
) -> str:
    """Delete one memory by id, or every chunk of one source."""
    if bool(id) == bool(source):
        raise InputError("id, source: give exactly one (an id from search, or a source path)")
    ws = writes.open(workspace, create=False)
    deadline = Deadline(60.0)
    if id:
        rid = check_id(id)
        found = deadline.wait(writes.reads.ask(FetchRecords(workspace=ws, ids=(rid,))), "delete")
        if rid not in found:
            raise InputError(f"id: no record {rid!r} in workspace {ws!r}")
        record = found[rid]
        if record.source_type != "memory" and record.chunk_count > 1:
            raise InputError(
                f"id: {rid!r} is chunk {record.chunk_index} of source {record.source!r}; "
                "delete the whole source with source= instead"
            )
        if record.source_type == "memory":
            writes.write(ws, WriteBatch(delete_ids=(rid,)))
        else:
            writes.write(ws, WriteBatch(drop_sources=((record.project, record.source),)))
        return f"deleted {rid}"
    records, total = deadline.wait(
        writes.reads.ask(SourceChunks(workspace=ws, project=project, source=source)),
        "delete",
    )
    if total == 0:
        raise InputError(f"source: no source {source!r}; list_sources shows what exists")
    projects = sorted({r.project for r in records})
    if len(projects) > 1:
        raise InputError(
            f"project: source {source!r} exists in projects {', '.join(projects)}; name one"
        )
    writes.write(ws, WriteBatch(drop_sources=((projects[0], source),)))
    return f"deleted source {source} ({total} chunks)"
