"""Memories: store one (a decision, a finding, a note), delete one or a whole source."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from imprint.actors.deadline import Deadline
from imprint.actors.read_messages import (
    FetchRecords,
    SameText,
    SourceChunks,
    SupersedeLinks,
    VectorQuery,
)
from imprint.errors import InputError
from imprint.ingest.tags import rule_tags
from imprint.reads.memory import check_id
from imprint.reads.neighbors import superseded_among
from imprint.reads.project_memory import session_observations
from imprint.store.records import (
    RECORD_TYPES,
    Filters,
    Record,
    SupersedeLink,
    WriteBatch,
    check_project,
    check_tag,
    content_sha,
    make_id,
    text_key,
)
from imprint.tagging import model_tags
from imprint.types import MemoryId, WorkspaceName
from imprint.writes._redaction import redaction_note
from imprint.writes.gateway import Writes

__all__ = [
    "MAX_MEMORY_CHARS",
    "MAX_SUPERSEDES",
    "Stored",
    "delete_records",
    "remember",
    "restore_memories",
    "restore_memory",
    "retag_memory",
    "store_memory",
    "supersede_memory",
]

MAX_MEMORY_CHARS = 8_000
MAX_SUPERSEDES = 20
# Memories of the project looked at for a paraphrase: the nearest few of every record (the
# project's chunks of ingested files among them), so a memory close enough is among them.
NEAR_LOOKED_AT = 10


class Stored(BaseModel):
    """What a store did: the memory's id, whether a memory of the same text was already
    there (then nothing new was written but the links), and the memories it supersedes."""

    model_config = ConfigDict(frozen=True)

    id: MemoryId
    existed: bool = False
    supersedes: tuple[MemoryId, ...] = ()
    # Set when the memory found says the same in other words (`store.near_duplicate`).
    similarity: float | None = None
    # (kind, count) of the secrets redacted before it was written.
    redacted: tuple[tuple[str, int], ...] = ()

    def line(self) -> str:
        """The store tool's answer: `stored ID`, `already stored as ID` or `already stored
        as ID (similar, 0.95)`, and what it supersedes."""
        head = f"already stored as {self.id}" if self.existed else f"stored {self.id}"
        if self.similarity is not None:
            head += f" (similar, {self.similarity:.2f})"
        head += redaction_note(self.redacted)
        return head + (f"; supersedes {', '.join(self.supersedes)}" if self.supersedes else "")


def tag_words(values: list[str], argument: str) -> tuple[str, ...]:
    out = []
    for v in values:
        v = v.strip().lower() if isinstance(v, str) else ""
        if not v or len(v) > 40:
            raise InputError(f"{argument}: {v!r} is not allowed; 1-40 characters each")
        out.append(check_tag(v, argument))
    if len(out) > 10:
        raise InputError(f"{argument}: {len(out)} given; at most 10")
    return tuple(dict.fromkeys(out))


def _superseded(
    writes: Writes, ws: WorkspaceName, ids: list[str], deadline: Deadline
) -> tuple[MemoryId, ...]:
    """The ids a store supersedes, checked: each a memory of this workspace; else InputError."""
    if not isinstance(ids, list) or len(ids) > MAX_SUPERSEDES:
        raise InputError(f"supersedes: a list of at most {MAX_SUPERSEDES} memory ids")
    wanted = tuple(dict.fromkeys(check_id(i, "supersedes") for i in ids))
    if not wanted:
        return ()
    found = deadline.wait(writes.reads.ask(FetchRecords(workspace=ws, ids=wanted)), "store")
    for rid in wanted:
        if rid not in found:
            raise InputError(f"supersedes: no memory {rid!r} in workspace {ws!r}")
        if found[rid].source_type != "memory":
            raise InputError(
                f"supersedes: {rid!r} is a chunk of {found[rid].source!r}, not a memory; "
                "only stored memories can be superseded"
            )
    return wanted


def _paraphrased(
    writes: Writes,
    ws: WorkspaceName,
    project: str,
    text: str,
    skip: tuple[MemoryId, ...],
    deadline: Deadline,
) -> tuple[MemoryId, float] | None:
    """The memory of this project nearest to `text` when its cosine similarity reaches
    `store.near_duplicate` (0 turns this off), leaving out the memories `skip` names (those
    it supersedes: a memory that replaces one is meant to differ from it) and memories
    already superseded (search no longer shows them)."""
    threshold = writes.runtime.config.store.near_duplicate
    if threshold <= 0:
        return None
    ask = VectorQuery(
        workspace=ws, text=text, limit=NEAR_LOOKED_AT, filters=Filters(project=project)
    )
    hits = deadline.wait(writes.reads.ask(ask), "store")
    close = [rid for rid, sim in hits if sim >= threshold and rid not in skip]
    if not close:
        return None
    replaced = superseded_among(writes.reads, ws, close, deadline)
    ids = tuple(rid for rid in close if rid not in replaced)
    found = deadline.wait(writes.reads.ask(FetchRecords(workspace=ws, ids=ids)), "store")
    for rid, sim in hits:
        record = found.get(rid)
        if record is not None and record.source_type == "memory" and record.project == project:
            return rid, sim
    return None


def memory_args(
    content: str,
    project: str,
    type: str,
    domains: list[str] | None,
    topics: list[str] | None,
) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """A memory's text, domains and topics as given, each checked (one line naming the
    argument when refused): what every store path, local or team, checks first."""
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
    return text, tag_words(domains or [], "domains"), tag_words(topics or [], "topics")


def store_memory(writes: Writes, content: str, *args: Any, **kwargs: Any) -> MemoryId:
    """`remember` (the same arguments), answering only the memory's id."""
    return remember(writes, content, *args, **kwargs).id


def remember(
    writes: Writes,
    content: str,
    project: str = "",
    type: str = "note",
    domains: list[str] | None = None,
    topics: list[str] | None = None,
    workspace: str = "",
    supersedes: list[str] | None = None,
) -> Stored:
    """Store one memory, superseding the memories `supersedes` names in the same write.

    The same text in the same project is stored once: the same bytes give the same id, and
    text that differs only in case, Unicode form, whitespace or punctuation
    (`records.text_key`) finds the memory stored first; so does text the embedder finds at
    least `store.near_duplicate` similar (a paraphrase), when that is set. Nothing new is
    written then but the supersede links. Nothing is written when any argument is refused."""
    text, given_domains, given_topics = memory_args(content, project, type, domains, topics)
    rid = make_id("memory", project, content_sha(text))
    ws = writes.open(workspace, create=True)
    deadline = Deadline(30)
    old = _superseded(writes, ws, supersedes or [], deadline)
    existing = deadline.wait(writes.reads.ask(FetchRecords(workspace=ws, ids=(rid,))), "store")
    same = rid if rid in existing else None
    if same is None:
        same = deadline.wait(
            writes.reads.ask(SameText(workspace=ws, project=project, key=text_key(text))),
            "store",
        )
    similarity = None
    if same is None:
        near = _paraphrased(writes, ws, project, text, old, deadline)
        if near is not None:
            same, similarity = near
    target = same or rid
    if target in old:
        raise InputError(f"supersedes: {target!r} is this memory itself")
    now = time.time()
    links = tuple(SupersedeLink(old=o, new=target, at=now) for o in old)
    if same is not None:
        if links:
            _refuse_cycle(writes, ws, old, same, deadline, "supersedes")
            writes.write(ws, WriteBatch(supersede=links))
        return Stored(id=same, existed=True, supersedes=old, similarity=similarity)
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
        created_at=now,
        content_sha=content_sha(text),
        tagged_by="model" if model is not None else "rules",
    )
    ack = writes.write(ws, WriteBatch(upserts=(record,), supersede=links))
    return Stored(id=record.id, supersedes=old, redacted=ack.redacted)


def restore_memories(writes: Writes, ids: list[str], workspace: str = "") -> str:
    """Show superseded memories again: the links that hide them are dropped (the memories
    that replaced them stay). InputError, changing nothing, for an id that is no memory of
    the workspace or is not superseded."""
    if not isinstance(ids, list) or not ids or len(ids) > MAX_SUPERSEDES:
        raise InputError(f"restore: a list of 1-{MAX_SUPERSEDES} memory ids")
    wanted = tuple(dict.fromkeys(check_id(i, "restore") for i in ids))
    ws = writes.open(workspace, create=False)
    deadline = Deadline(30)
    found = deadline.wait(writes.reads.ask(FetchRecords(workspace=ws, ids=wanted)), "restore")
    links = deadline.wait(writes.reads.ask(SupersedeLinks(workspace=ws, ids=wanted)), "restore")
    by_old = {link.old: link.new for link in links}
    for rid in wanted:
        if rid not in found or found[rid].source_type != "memory":
            raise InputError(f"restore: no memory {rid!r} in workspace {ws!r}")
        if rid not in by_old:
            raise InputError(f"restore: memory {rid!r} is not superseded; nothing to restore")
    writes.write(ws, WriteBatch(restore=wanted))
    return "; ".join(f"restored {rid} (was superseded by {by_old[rid]})" for rid in wanted)


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
    observed = session_observations(writes.reads, ws, projects[0], source, deadline)
    extra, moved = _kept_elsewhere(observed, source)
    writes.write(
        ws, WriteBatch(drop_sources=((projects[0], source),), delete_ids=extra, upserts=moved)
    )
    more = f"; {len(extra)} observation{'s' * (len(extra) != 1)} of it" if extra else ""
    return f"deleted source {source} ({total} chunks{more})"


def _memory(writes: Writes, ws: WorkspaceName, rid: MemoryId, argument: str) -> Record:
    """The stored memory `rid` of this workspace; InputError naming `argument` else."""
    found = Deadline(30).wait(writes.reads.ask(FetchRecords(workspace=ws, ids=(rid,))), argument)
    if rid not in found:
        raise InputError(f"{argument}: no memory {rid!r} in workspace {ws!r}")
    if found[rid].source_type != "memory":
        raise InputError(f"{argument}: {rid!r} is a chunk of {found[rid].source!r}, not a memory")
    return found[rid]


def supersede_memory(writes: Writes, old: str, new: str, workspace: str = "") -> str:
    """Mark memory `old` superseded by memory `new` (both stored already): what `store(...,
    supersedes=[old])` records, for two memories that exist. Reversible (`restore_memory`)."""
    ws = writes.open(workspace, create=False)
    old_id, new_id = check_id(old, "id"), check_id(new, "by")
    if old_id == new_id:
        raise InputError(f"by: {new_id!r} is the memory itself; name the memory that replaces it")
    _memory(writes, ws, old_id, "id")
    _memory(writes, ws, new_id, "by")
    _refuse_cycle(writes, ws, (old_id,), new_id, Deadline(30), "by")
    link = SupersedeLink(old=old_id, new=new_id, at=time.time())
    writes.write(ws, WriteBatch(supersede=(link,)))
    return f"{old_id} superseded by {new_id}"


# How many successors of a memory a supersede follows looking for a cycle (a chain of
# corrections is short; a longer one is checked this far).
MAX_CHAIN = 1_000


def _refuse_cycle(
    writes: Writes,
    ws: WorkspaceName,
    olds: tuple[MemoryId, ...],
    new: MemoryId,
    deadline: Deadline,
    argument: str,
) -> None:
    """InputError naming `argument` when `new` is itself superseded, directly or through
    its successors, by one of `olds`: the link would close a cycle in which every memory
    has a successor, so none of them would be shown again."""
    chain = [new]
    while len(chain) <= MAX_CHAIN:
        here = chain[-1]
        links = deadline.wait(writes.reads.ask(SupersedeLinks(workspace=ws, ids=(here,))), argument)
        after = next((link.new for link in links if link.old == here), None)
        if after is None or after in chain:
            return
        if after in olds:
            via = f", through {', '.join(chain[1:])}," if len(chain) > 1 else ""
            raise InputError(
                f"{argument}: {new!r} is itself superseded{via} by {after!r}; restore it first"
            )
        chain.append(after)


def restore_memory(writes: Writes, id: str, workspace: str = "") -> str:
    """Bring one superseded memory back (the dashboard's Restore): `restore_memories` for
    one id, so search, recall and the briefing show it again; what replaced it stays."""
    return restore_memories(writes, [id], workspace)


def retag_memory(
    writes: Writes, id: str, type: str, topics: list[str] | None = None, workspace: str = ""
) -> str:
    """Give a stored memory another type (and, when `topics` is given, those topics); its
    text, id and date stay. The record is written again whole, so both indexes agree."""
    if type not in RECORD_TYPES:
        raise InputError(f"type: {type!r} is not allowed; one of {', '.join(RECORD_TYPES)}")
    ws = writes.open(workspace, create=False)
    rid = check_id(id)
    record = _memory(writes, ws, rid, "id")
    update: dict[str, Any] = {"type": type, "tagged_by": "person"}
    if topics is not None:
        update["topics"] = tag_words(topics, "topics")
    if all(getattr(record, k) == v for k, v in update.items() if k != "tagged_by"):
        return f"{rid} unchanged (type {type})"
    writes.write(ws, WriteBatch(upserts=(record.model_copy(update=update),)))
    return f"retagged {rid} as {type}"


def _kept_elsewhere(
    observed: Sequence[Record], source: str
) -> tuple[tuple[MemoryId, ...], tuple[Record, ...]]:
    """Of the observations capture kept from session `source` (`session:<id>`), each sourced
    `session:<id>#<chunk>`: those only it said, which deleting the session takes with it, and
    those a later session said again (named in their context, `session:<id>#<chunk> turn n`
    parts joined by "; "), kept and sourced to the next session that said them."""
    gone: list[MemoryId] = []
    moved: list[Record] = []
    for record in observed:
        parts = [p for p in record.context.split("; ") if not p.startswith(f"{source}#")]
        if not parts or not parts[0].startswith("session:"):
            gone.append(record.id)
            continue
        update = {"source": parts[0].split(" ", 1)[0], "context": "; ".join(parts)}
        moved.append(record.model_copy(update=update))
    return tuple(gone), tuple(moved)
