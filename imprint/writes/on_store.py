"""The write row functions on the storage seam: store, delete and kg_edit for the team server.

The same rules as the local writes (`writes.memories.remember`, `writes.facts.edit_facts`,
with their limits imported from there, one copy): the same text in the same project is one
memory with one id, supersedes names memories of this workspace, a refused argument writes
nothing. Each write is one `MemoryStore.write` (one transaction on PostgreSQL), recorded with
who made it (`actor`, the token's subject) for `imprint team audit`.
"""

from __future__ import annotations

import time

from imprint.errors import InputError
from imprint.ingest.tags import rule_tags
from imprint.reads.memory import check_id
from imprint.store.records import (
    Fact,
    Record,
    SupersedeLink,
    WriteBatch,
    check_project,
    content_sha,
    make_id,
    text_key,
)
from imprint.store.seam import MemoryStore
from imprint.types import MemoryId
from imprint.writes._redaction import redacted_batch, redaction_note
from imprint.writes.facts import fact_part
from imprint.writes.memories import MAX_SUPERSEDES, memory_args

__all__ = ["delete_on_store", "edit_facts_on_store", "store_on_store"]


def _write(store: MemoryStore, batch: WriteBatch, actor: str, redact: bool) -> str:
    """One write, its secrets redacted first as every local write's are (`writes._redaction`:
    the team store is written behind the seam, past the local write gateway that does it);
    the answer's note of what was redacted."""
    if redact:
        batch, found, _ = redacted_batch(batch)
        store.write(batch, actor=actor)
        return redaction_note(tuple(sorted(found.items())))
    store.write(batch, actor=actor)
    return ""


# Chunk indexes a source's delete looks through to find its projects (every chunk of any
# source ingest makes is below it).
MAX_CHUNK_INDEX = 1_000_000


def store_on_store(
    store: MemoryStore,
    content: str,
    project: str = "",
    type: str = "note",
    domains: list[str] | None = None,
    topics: list[str] | None = None,
    supersedes: list[str] | None = None,
    *,
    actor: str,
    redact: bool = True,
) -> str:
    """Store one memory (or find the one already holding this text); its one-line answer."""
    text, given_domains, given_topics = memory_args(content, project, type, domains, topics)
    if not isinstance(supersedes, list | None) or len(supersedes or []) > MAX_SUPERSEDES:
        raise InputError(f"supersedes: a list of at most {MAX_SUPERSEDES} memory ids")
    old = list(dict.fromkeys(check_id(o, "supersedes") for o in supersedes or []))
    found = store.fetch(old)
    missing = [o for o in old if o not in found or found[o].source_type != "memory"]
    if missing:
        raise InputError(f"supersedes: no memory {missing[0]!r} in workspace {store.name!r}")
    rid = make_id("memory", project, content_sha(text))
    same: MemoryId | None = rid if rid in store.fetch([rid]) else None
    if same is None:
        same = store.same_text(project, text_key(text))
    target = same or rid
    if target in old:
        raise InputError(f"supersedes: {target!r} is this memory itself")
    now = time.time()
    links = tuple(SupersedeLink(old=o, new=target, at=now) for o in old)
    note = f" (superseding {', '.join(old)})" if old else ""
    if same is not None:
        if links:
            _write(store, WriteBatch(supersede=links), actor, redact)
        return f"exists {same} in {store.name}{note}"
    rules = rule_tags("memory.txt", text)
    record = Record(
        id=rid,
        content=text,
        project=project,
        source_type="memory",
        type=type,
        kind="memory",
        domains=given_domains,
        topics=given_topics or tuple(rules["topics"]),  # type: ignore[arg-type]
        created_at=now,
        content_sha=content_sha(text),
    )
    redacted = _write(store, WriteBatch(upserts=(record,), supersede=links), actor, redact)
    return f"stored {rid} in {store.name}{note}{redacted}"


def delete_on_store(
    store: MemoryStore, id: str = "", source: str = "", project: str = "", *, actor: str
) -> str:
    """Delete one memory by id, or every chunk of one source (a tombstone either way), as the
    local `delete` does: exactly one of them."""
    if bool(id) == bool(source):
        raise InputError("id, source: give exactly one (an id from search, or a source path)")
    if id:
        rid = check_id(id)
        record = store.fetch([rid]).get(rid)
        if record is None:
            raise InputError(f"id: no record {rid!r} in workspace {store.name!r}")
        if record.source_type != "memory" and record.chunk_count > 1:
            raise InputError(
                f"id: {rid!r} is chunk {record.chunk_index} of source {record.source!r}; "
                "delete the whole source with source= instead"
            )
        if record.source_type == "memory":
            store.write(WriteBatch(delete_ids=(rid,)), actor=actor)
        else:
            store.write(WriteBatch(drop_sources=((record.project, record.source),)), actor=actor)
        return f"deleted {rid}"
    check_project(project)
    chunks, total = store.source_chunks(project, source, 0, MAX_CHUNK_INDEX)
    if total == 0:
        raise InputError(f"source: no source {source!r}; list_sources shows what exists")
    projects = sorted({r.project for r in chunks})
    if len(projects) > 1:
        raise InputError(
            f"project: source {source!r} exists in projects {', '.join(projects)}; name one"
        )
    store.write(WriteBatch(drop_sources=((projects[0], source),)), actor=actor)
    return f"deleted source {source} ({total} chunks)"


def edit_facts_on_store(
    store: MemoryStore,
    action: str,
    subject: str = "",
    predicate: str = "",
    object: str = "",
    fact_id: str = "",
    source: str = "",
    *,
    actor: str,
    redact: bool = True,
) -> str:
    """Add a fact unless it already holds, or end one by id."""
    if action not in ("add", "end"):
        raise InputError(f"action: {action!r} is not allowed; one of add, end")
    if action == "add":
        s, p, o = (
            fact_part(subject, "subject"),
            fact_part(predicate, "predicate"),
            fact_part(object, "object"),
        )
        for fact in store.facts(s, p, False, 200):
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
        redacted = _write(store, WriteBatch(add_facts=(fact,)), actor, redact)
        if redacted:  # the fact as stored, not the secret the caller sent
            return f"added fact:{fact.id}{redacted}"
        return f"added fact:{fact.id} ({s} | {p} | {o})"
    fid = fact_id.removeprefix("fact:").strip() if isinstance(fact_id, str) else ""
    if not fid:
        raise InputError("fact_id: required to end a fact; kg_query shows fact ids")
    found = store.fact(fid)
    if found is None:
        raise InputError(f"fact_id: no fact {fid!r} in workspace {store.name!r}")
    if found.ended is not None:
        raise InputError(f"fact_id: fact:{fid} has already ended")
    store.write(WriteBatch(end_facts=((fid, time.time()),)), actor=actor)
    return f"ended fact:{fid} ({found.subject} | {found.predicate} | {found.object})"
