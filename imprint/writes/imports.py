"""`imprint import`: an export file (`imprint.reads.export`) written into this data dir.

The whole file is read and checked first (its header, its version, every line, the counts
the header promised): a corrupt or truncated file is refused with a one-line error naming
the line, before anything is written. Then each workspace's lines are written through the
Writes gateway: the writer embeds every text again with the local model, a source's chunks
and its registry entry go in one write, and what is already there as the file has it is
left alone, so a second import changes nothing and an import cut short (a crash, a kill) is
finished by running it again. Ids are kept.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ValidationError

from imprint.actors.read_messages import FactById, FetchRecords, SourceEntryQuery
from imprint.errors import InputError
from imprint.reads.deadline import Deadline
from imprint.reads.export import (
    FORMAT,
    FORMAT_VERSION,
    ChunkLine,
    Counts,
    FactLine,
    Header,
    MemoryLine,
    SourceLine,
)
from imprint.reads.memory import check_id
from imprint.store.context import chunk_contexts
from imprint.store.records import (
    RECORD_TYPES,
    Fact,
    Record,
    SourceEntry,
    WriteBatch,
    check_project,
    check_tag,
    content_sha,
)
from imprint.types import MemoryId, WorkspaceName
from imprint.workspaces import validate_name
from imprint.writes.gateway import Writes

__all__ = ["ExportFile", "import_file", "read_export"]

# Records per write: a write holds the writer for about this many embeddings.
BATCH_RECORDS = 64
_KINDS: dict[str, type[BaseModel]] = {
    "memory": MemoryLine,
    "source": SourceLine,
    "fact": FactLine,
}

# Called with how many more records were handled (written, or found already there).
Progress = Callable[[int], None]


@dataclass
class _Workspace:
    memories: list[MemoryLine] = field(default_factory=list)
    sources: list[SourceLine] = field(default_factory=list)
    facts: list[FactLine] = field(default_factory=list)

    def counts(self) -> Counts:
        chunks = sum(len(s.chunks) for s in self.sources)
        return Counts(
            memories=len(self.memories),
            sources=len(self.sources),
            chunks=chunks,
            facts=len(self.facts),
        )


@dataclass
class ExportFile:
    """A whole export file, checked line by line."""

    header: Header
    workspaces: dict[str, _Workspace]
    lines: int

    @property
    def records(self) -> int:
        return sum(c.memories + c.chunks for c in self.header.workspaces.values())


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    return f"{where}: {error['msg']}" if where else str(error["msg"])


def _check_tags(tags: object, type: str) -> None:
    if type not in RECORD_TYPES:
        raise InputError(f"type: {type!r} is not allowed; one of {', '.join(RECORD_TYPES)}")
    for value in (*getattr(tags, "domains", ()), *getattr(tags, "topics", ())):
        check_tag(value, "tags")


def _check(line: BaseModel, seen: set[tuple[str, str]]) -> None:
    """What a record must be, beyond its fields' types; InputError names the field."""
    ws = str(getattr(line, "workspace", ""))
    validate_name(ws)
    if isinstance(line, FactLine):
        ids: Iterable[str] = [f"fact:{line.id}"]
        check_id(line.id)
    elif isinstance(line, MemoryLine):
        check_project(line.project)
        check_id(line.id)
        for old in line.supersedes:
            check_id(old, "supersedes")
        if not line.content.strip():
            raise InputError("content: must be non-empty text")
        _check_tags(line.tags, line.type)
        ids = [line.id]
    else:
        assert isinstance(line, SourceLine)
        check_project(line.project)
        if not line.source.strip():
            raise InputError("source: must be a source name")
        for chunk in line.chunks:
            check_id(chunk.id)
            _check_tags(chunk.tags, chunk.type)
        ids = [c.id for c in line.chunks] + [f"source:{line.project}|{line.source}"]
    for key in ids:
        if (ws, key) in seen:
            raise InputError(f"id: {key!r} is already on an earlier line")
        seen.add((ws, key))


def _header(data: object) -> Header:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InputError(f"not an Imprint export (its first line names no format {FORMAT!r})")
    version = data.get("version")
    if version != FORMAT_VERSION:
        raise InputError(
            f"format version {version!r} is not known; this imprint reads version {FORMAT_VERSION}"
        )
    return Header.model_validate(data)


def read_export(path: Path) -> ExportFile:
    """The whole file, checked; InputError `import: line N: ...` at the first bad line."""
    header: Header | None = None
    workspaces: dict[str, _Workspace] = {}
    seen: set[tuple[str, str]] = set()
    number = 0
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, 1):
            try:
                if not raw.endswith(b"\n"):
                    raise InputError("cut short (no line end): the file is truncated")
                data = json.loads(raw.decode("utf-8"))
                if header is None:
                    header = _header(data)
                    workspaces = {ws: _Workspace() for ws in header.workspaces}
                    continue
                kind = data.get("line") if isinstance(data, dict) else None
                model = _KINDS.get(str(kind))
                if model is None:
                    raise InputError(f"line: {kind!r} is not one of {', '.join(_KINDS)}")
                line = model.model_validate(data)
                _check(line, seen)
                place = workspaces.get(str(getattr(line, "workspace", "")))
                if place is None:
                    raise InputError("workspace: not one the header counts")
                if isinstance(line, MemoryLine):
                    place.memories.append(line)
                elif isinstance(line, SourceLine):
                    place.sources.append(line)
                elif isinstance(line, FactLine):
                    place.facts.append(line)
            except UnicodeDecodeError as exc:
                raise InputError(f"import: line {number}: not UTF-8 ({exc.reason})") from exc
            except ValueError as exc:  # JSON, and pydantic's ValidationError
                why = _first_error(exc) if isinstance(exc, ValidationError) else str(exc)
                raise InputError(f"import: line {number}: not a valid line ({why})") from exc
            except InputError as exc:
                raise InputError(f"import: line {number}: {exc}") from exc
    if header is None:
        raise InputError(f"import: line 1: {path} is empty; not an Imprint export")
    for ws, counted in header.workspaces.items():
        held = workspaces[ws].counts()
        if held != counted:
            raise InputError(
                f"import: line {number + 1}: the file ends after {number} lines, but its "
                f"header counts {counted.model_dump()} in workspace {ws!r} and the lines hold "
                f"{held.model_dump()}: the file is truncated or edited; nothing was written"
            )
    return ExportFile(header=header, workspaces=workspaces, lines=number)


def _memory_record(line: MemoryLine) -> Record:
    text = line.content
    return Record(
        id=MemoryId(line.id),
        content=text,
        project=line.project,
        source_type="memory",
        type=line.type,
        **line.tags.model_dump(),
        created_at=line.created_at,
        content_sha=content_sha(text),
        tagged_by=line.tagged_by,
    )


def _chunk_record(line: SourceLine, index: int, chunk: ChunkLine, context: str) -> Record:
    return Record(
        id=MemoryId(chunk.id),
        content=chunk.text,
        project=line.project,
        source=line.source,
        source_type=line.source_type,
        chunk_index=index,
        chunk_count=len(line.chunks),
        type=chunk.type,
        **chunk.tags.model_dump(),
        created_at=chunk.created_at,
        source_mtime=chunk.source_mtime,
        content_sha=content_sha(chunk.text),
        tagged_by=chunk.tagged_by,
        context=context,
    )


def _source_records(line: SourceLine) -> tuple[SourceEntry, list[Record]]:
    texts = [c.text for c in line.chunks]
    # The context line as this version indexes it (what a re-index would give).
    lang = line.chunks[0].tags.lang if line.chunks else ""
    contexts = chunk_contexts(line.source, texts, lang)
    records = [
        _chunk_record(line, i, c, ctx)
        for i, (c, ctx) in enumerate(zip(line.chunks, contexts, strict=True))
    ]
    entry = SourceEntry(
        project=line.project,
        source=line.source,
        source_type=line.source_type,
        mtime=line.mtime,
        sha=line.sha256,
        chunk_count=len(records),
        root=line.root,
        validators=line.validators,
    )
    return entry, records


def _held(writes: Writes, ws: WorkspaceName, ids: list[MemoryId]) -> dict[MemoryId, Record]:
    deadline = Deadline(600)
    asks = [
        writes.reads.ask(FetchRecords(workspace=ws, ids=tuple(ids[i : i + 500])))
        for i in range(0, len(ids), 500)
    ]
    held: dict[MemoryId, Record] = {}
    for pending in asks:
        held.update(deadline.wait(pending, "import"))
    return held


def _import_workspace(
    writes: Writes, ws: WorkspaceName, lines: _Workspace, progress: Progress
) -> tuple[int, int]:
    """Write what the store does not hold as the lines have it; (written, already there)."""
    memories = [_memory_record(m) for m in lines.memories]
    sources = [_source_records(s) for s in lines.sources]
    ids = [r.id for r in memories] + [r.id for _, recs in sources for r in recs]
    held = _held(writes, ws, ids)
    deadline = Deadline(600)
    entries = [
        writes.reads.ask(SourceEntryQuery(workspace=ws, project=e.project, source=e.source))
        for e, _ in sources
    ]
    held_entries = [deadline.wait(p, "import") for p in entries]
    facts = [Fact(**f.model_dump(exclude={"line", "workspace"})) for f in lines.facts]
    held_facts = [
        deadline.wait(p, "import")
        for p in [writes.reads.ask(FactById(workspace=ws, fact_id=f.id)) for f in facts]
    ]

    batch: list[Record] = []
    batch_entries: list[SourceEntry] = []
    written = kept = 0

    def flush() -> None:
        nonlocal written
        if batch or batch_entries:
            writes.write(ws, WriteBatch(upserts=tuple(batch), set_sources=tuple(batch_entries)))
            written += len(batch)
            progress(len(batch))
            batch.clear()
            batch_entries.clear()

    for rec in memories:
        if held.get(rec.id) == rec:
            kept += 1
            progress(1)
            continue
        batch.append(rec)
        if len(batch) >= BATCH_RECORDS:
            flush()
    for (entry, records), was in zip(sources, held_entries, strict=True):
        if was == entry and all(held.get(r.id) == r for r in records):
            kept += len(records)
            progress(len(records))
            continue
        batch.extend(records)  # a source's chunks and its entry: one write
        batch_entries.append(entry)
        if len(batch) >= BATCH_RECORDS:
            flush()
    flush()
    new_facts = tuple(f for f, was in zip(facts, held_facts, strict=True) if was != f)
    for start in range(0, len(new_facts), 500):
        writes.write(ws, WriteBatch(add_facts=new_facts[start : start + 500]))
    return written + len(new_facts), kept + len(facts) - len(new_facts)


def import_file(
    writes: Writes, parsed: ExportFile, workspace: str = "", progress: Progress | None = None
) -> str:
    """Write a checked export into this data dir; one line saying what was written.

    An export of one workspace goes into `workspace` (empty: the active one); an export of
    several goes into workspaces of their own names, and naming one is refused."""
    names = sorted(parsed.workspaces)
    if len(names) > 1 and workspace:
        raise InputError(
            f"workspace: the file holds {len(names)} workspaces ({', '.join(names)}); "
            "each is imported into its own name, so name none"
        )
    targets = {
        name: writes.open(workspace if len(names) == 1 else name, create=True) for name in names
    }
    parts, written, kept = [], 0, 0
    for name in names:
        lines = parsed.workspaces[name]
        done = _import_workspace(writes, targets[name], lines, progress or (lambda _: None))
        written, kept = written + done[0], kept + done[1]
        c = lines.counts()
        parts.append(
            f"{targets[name]}: {c.memories} memories, {c.sources} sources ({c.chunks} chunks), "
            f"{c.facts} facts"
        )
    return (
        f"imported {'; '.join(parts) or 'nothing'}: {written} written, {kept} already there "
        "(embedded again with the local model)"
    )
