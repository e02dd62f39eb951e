"""`imprint import`: an export file (`imprint.reads.export`) written into this data dir.

The whole file is read and checked first (its header, its version, every line, the counts
the header promised): a corrupt or truncated file is refused with a one-line error naming
the line, before anything is written (a supersede link must be on both of its memories,
both in the file). Then each workspace's lines are written through the Writes gateway, in
batches: this process embeds a batch again with the local model while the writer applies the
one before, a source's chunks and its registry entry go in one write, and what is already
there as the file has it is left alone, so a second import changes nothing and an import cut
short (a crash, a kill) is finished by running it again. Ids, dates and supersede links are
kept; registry roots are not (a root from a file would name a folder of this computer).
What the store holds otherwise than the file (a memory of the same text retagged or dated
differently, a source ingested again since) is left as it is and counted, unless the caller
asks for the file's (`replace`): an import never rewrites a memory unasked. Beside a running
daemon the same function runs in the daemon (`imprint import` asks it,
`imprint.daemon.hosting.answer_import`), so its writer stays the store's only one.

A file from elsewhere is untrusted (DESIGN 12): a line whose times are not finite, are
negative or lie past this computer's clock by more than FUTURE_SKEW_SEC, a memory longer than
store's own limit, a kind only capture or ingest gives, an id this store holds as a record of
another kind (or of another source), or a line longer than MAX_LINE_BYTES (skipped unread) is
refused and counted by its reason (`Refused`), and the rest of the file goes on; `line()`
says how many were refused and why.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ValidationError

from imprint import _faults
from imprint._fs import bounded_lines
from imprint.actors.read_messages import FactById, FetchRecords, SourceEntryQuery, SupersedeLinks
from imprint.actors.writer import WriteAck
from imprint.errors import InputError
from imprint.reads.deadline import Deadline, Pending
from imprint.reads.export import (
    FORMAT,
    READ_VERSIONS,
    ChunkLine,
    Counts,
    FactLine,
    Header,
    Link,
    MemoryLine,
    SourceLine,
    exported_fields,
)
from imprint.reads.memory import check_id
from imprint.store.context import chunk_contexts
from imprint.store.records import (
    RECORD_TYPES,
    SESSION_SUMMARY_KIND,
    Fact,
    Record,
    SourceEntry,
    SupersedeLink,
    WriteBatch,
    check_project,
    content_sha,
    make_id,
)
from imprint.types import MemoryId, WorkspaceName
from imprint.workspaces import validate_name
from imprint.writes.gateway import WRITE_TIMEOUT_SEC, Writes
from imprint.writes.memories import MAX_MEMORY_CHARS

__all__ = [
    "BATCH_RECORDS",
    "FUTURE_SKEW_SEC",
    "MAX_LINE_BYTES",
    "OTHER_KIND",
    "TOO_LONG",
    "ExportFile",
    "ImportReport",
    "Refused",
    "check_line",
    "first_error",
    "import_file",
    "memory_record",
    "read_export",
    "refused_words",
    "source_records",
]

MAX_TAG_CHARS = 200
# The longest line an export or sync file may hold; a longer one is skipped unread. A source
# line holds a whole file's chunks: one of `ingest.max_file_bytes`' highest setting (64 MiB),
# overlap and JSON escapes included, fits.
MAX_LINE_BYTES = 128 * 1024 * 1024
# How far past this computer's clock a time in a file may lie (the other machine's clock runs
# a little ahead); a later time would rank its line above everything stored here until then.
FUTURE_SKEW_SEC = 300.0
# The kinds a memory line may claim: what `store` gives ("" from before kinds), and capture's
# session summary under the id capture gives it (`_capture_summary`). A chunk claims neither.
MEMORY_KINDS = ("", "memory")
# Why a line was refused, the words `refused_words` counts them by.
TOO_LONG = f"longer than {MAX_LINE_BYTES} bytes (skipped unread)"
BAD_TIME = (
    "with a time that is not finite, is negative or is later than now plus "
    f"{FUTURE_SKEW_SEC / 60:g} minutes"
)
TOO_BIG = f"with a memory longer than {MAX_MEMORY_CHARS} characters"
BAD_KIND = "claiming a kind only capture or ingest gives"
OTHER_KIND = "whose id this store holds as a record of another kind or source"
# The first line of capture's session summary (`imprint.capture.summary.summary_text`).
_SUMMARY_HEAD = re.compile(r"Session in project (.+) \(\d+ turns, id (\S+)\):")
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
    numbers: dict[str, int] = field(default_factory=dict)  # a memory's line number, by id
    # Refused lines (`Refused`), as the header counts them, and the refused memories' ids:
    # a link to one of those is left out, not a damaged file.
    refused: Counts = field(default_factory=Counts)
    refused_ids: set[str] = field(default_factory=set)

    def links(self) -> list[SupersedeLink]:
        return [
            SupersedeLink(old=MemoryId(old.id), new=MemoryId(m.id), at=old.at)
            for m in self.memories
            for old in m.supersedes
            if old.id not in self.refused_ids
        ]

    def refuse(self, line: BaseModel) -> None:
        r = self.refused
        if isinstance(line, MemoryLine):
            self.refused_ids.add(line.id)
        chunks = len(line.chunks) if isinstance(line, SourceLine) else 0
        self.refused = Counts(
            memories=r.memories + isinstance(line, MemoryLine),
            sources=r.sources + isinstance(line, SourceLine),
            chunks=r.chunks + chunks,
            facts=r.facts + isinstance(line, FactLine),
        )

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
    refused: Counter[str] = field(default_factory=Counter)  # lines not taken, by reason

    @property
    def records(self) -> int:
        return sum(c.memories + c.chunks for c in self.header.workspaces.values())


class Refused(InputError):
    """A line this store does not take, for a reason counted in words; the rest of the file
    goes on (a damaged file, by contrast, is refused whole)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def refused_words(refused: Counter[str]) -> str:
    """`N lines refused (n why, ...)`, or empty when none was."""
    total = sum(refused.values())
    if not total:
        return ""
    why = ", ".join(f"{n} {reason}" for reason, n in sorted(refused.items()))
    return f"{total} line{'s' if total != 1 else ''} refused ({why})"


def _times(line: BaseModel) -> list[float]:
    if isinstance(line, MemoryLine):
        links = [*line.supersedes, *([line.superseded_by] if line.superseded_by else [])]
        return [line.created_at, *(link.at for link in links)]
    if isinstance(line, SourceLine):
        return [line.mtime, *(t for c in line.chunks for t in (c.created_at, c.source_mtime))]
    if isinstance(line, FactLine):
        return [line.valid_from, *([line.ended] if line.ended is not None else [])]
    at = getattr(line, "at", None)  # a sync file's tombstone and link lines
    return [at] if isinstance(at, float) else []


def _capture_summary(line: MemoryLine) -> bool:
    """Whether a memory is a session summary as capture writes one: its first line names its
    project and session, and its id is the one capture gives that pair."""
    head = _SUMMARY_HEAD.fullmatch(line.content.split("\n", 1)[0])
    return (
        head is not None
        and head.group(1) == (line.project or "-")
        and line.id == make_id(SESSION_SUMMARY_KIND, line.project, head.group(2))
    )


def check_trusted(line: BaseModel, latest: float) -> None:
    """What a well-formed line from elsewhere must also be to be taken; Refused says why
    not. `latest`: the latest time allowed (now plus FUTURE_SKEW_SEC)."""
    # `not <=` refuses NaN too: every comparison with it is false.
    if any(not (0.0 <= t <= latest) for t in _times(line)):
        raise Refused(BAD_TIME)
    if isinstance(line, MemoryLine):
        if len(line.content.strip()) > MAX_MEMORY_CHARS:
            raise Refused(TOO_BIG)
        kind = line.tags.kind
        if kind not in MEMORY_KINDS and not (
            kind == SESSION_SUMMARY_KIND and _capture_summary(line)
        ):
            raise Refused(BAD_KIND)
    if isinstance(line, SourceLine) and any(
        c.tags.kind in (*MEMORY_KINDS[1:], SESSION_SUMMARY_KIND) for c in line.chunks
    ):
        raise Refused(BAD_KIND)


def first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    return f"{where}: {error['msg']}" if where else str(error["msg"])


def _check_tags(tags: object, type: str) -> None:
    if type not in RECORD_TYPES:
        raise InputError(f"type: {type!r} is not allowed; one of {', '.join(RECORD_TYPES)}")
    # Not `check_tag`, the rule for a tag a caller gives: ingest's own topics are words of
    # the text of any length (`create_connected_server_and_client_session`), and an export
    # carries them as the store holds them.
    for value in (*getattr(tags, "domains", ()), *getattr(tags, "topics", ())):
        if not value or len(value) > MAX_TAG_CHARS or not value.isprintable():
            raise InputError(
                f"tags: {value[:60]!r} is not a tag; 1-{MAX_TAG_CHARS} printable characters"
            )


def check_line(line: BaseModel, seen: set[tuple[str, str]], latest: float | None = None) -> None:
    """What a record must be, beyond its fields' types; InputError names the field, Refused
    (`check_trusted`) a line well formed but not taken. `latest`: see `check_trusted`."""
    ws = str(getattr(line, "workspace", ""))
    validate_name(ws)
    if isinstance(line, FactLine):
        ids: Iterable[str] = [f"fact:{line.id}"]
        check_id(line.id)
    elif isinstance(line, MemoryLine):
        check_project(line.project)
        check_id(line.id)
        for old in line.supersedes:
            check_id(old.id, "supersedes")
        if line.superseded_by is not None:
            check_id(line.superseded_by.id, "superseded_by")
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
    check_trusted(line, time.time() + FUTURE_SKEW_SEC if latest is None else latest)
    for key in ids:
        if (ws, key) in seen:
            raise InputError(f"id: {key!r} is already on an earlier line")
        seen.add((ws, key))


def _header(data: object) -> Header:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InputError(f"not an Imprint export (its first line names no format {FORMAT!r})")
    version = data.get("version")
    if version not in READ_VERSIONS:
        known = ", ".join(str(v) for v in READ_VERSIONS)
        raise InputError(f"format version {version!r} is not known; this imprint reads {known}")
    return Header.model_validate(data)


def _check_links(ws: str, lines: _Workspace) -> None:
    """Each supersede link is on both of its memories, at the same time; InputError naming
    the line of the memory whose side does not match."""
    by_id = {m.id: m for m in lines.memories}
    for m in lines.memories:
        where = f"import: line {lines.numbers[m.id]}"
        for old in m.supersedes:
            if old.id in lines.refused_ids:
                continue
            other = by_id.get(old.id)
            if old.id == m.id or other is None or other.superseded_by != Link(id=m.id, at=old.at):
                raise InputError(
                    f"{where}: supersedes: {old.id!r} is not a memory of workspace {ws!r} in "
                    "this file whose superseded_by names this one at the same time"
                )
        newer = by_id.get(m.superseded_by.id) if m.superseded_by else None
        if (
            m.superseded_by
            and m.superseded_by.id not in lines.refused_ids
            and (newer is None or Link(id=m.id, at=m.superseded_by.at) not in newer.supersedes)
        ):
            raise InputError(
                f"{where}: superseded_by: {m.superseded_by.id!r} is not a memory of workspace "
                f"{ws!r} in this file whose supersedes names this one at the same time"
            )
    # Each side matching is not enough: memories that supersede each other in a cycle each
    # have a successor, so none of them would be shown again.
    after = {
        m.id: m.superseded_by.id
        for m in lines.memories
        if m.superseded_by and m.superseded_by.id not in lines.refused_ids
    }
    done: set[str] = set()
    for m in lines.memories:
        chain: list[str] = []
        here: str | None = m.id
        while here is not None and here not in done and here not in chain:
            chain.append(here)
            here = after.get(here)
        done.update(chain)
        if here is not None and here in chain:
            cycle = chain[chain.index(here) :]
            raise InputError(
                f"import: line {max(lines.numbers[i] for i in cycle)}: supersedes: memories "
                f"{', '.join(cycle)} supersede each other in a cycle, which would hide them "
                "all; nothing was written"
            )


def _counts_match(header: Header, workspaces: dict[str, _Workspace], unread: int) -> bool:
    """Whether the lines held and refused are those the header counts; with `unread` lines
    skipped unread (their workspace and kind unknown), their number must make up the rest."""
    held = {
        ws: Counts(**{k: n + getattr(w.refused, k) for k, n in w.counts().model_dump().items()})
        for ws, w in workspaces.items()
    }
    if not unread:
        return held == header.workspaces
    lines = ("memories", "sources", "facts")  # a chunk is not a line of its own
    promised = sum(getattr(c, k) for c in header.workspaces.values() for k in lines)
    found = sum(getattr(c, k) for c in held.values() for k in lines)
    return promised == found + unread


def read_export(path: Path) -> ExportFile:
    """The whole file, checked; InputError `import: line N: ...` at the first bad line. A
    line refused (`Refused`) is counted in `refused` and left out."""
    header: Header | None = None
    workspaces: dict[str, _Workspace] = {}
    seen: set[tuple[str, str]] = set()
    refused: Counter[str] = Counter()
    latest = time.time() + FUTURE_SKEW_SEC
    number = 0
    with path.open("rb") as handle:
        for number, raw in enumerate(bounded_lines(handle, MAX_LINE_BYTES), 1):
            try:
                if raw is None:
                    if header is None:
                        raise InputError(f"its first line is {TOO_LONG}; not an Imprint export")
                    refused[TOO_LONG] += 1
                    continue
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
                place = workspaces.get(str(getattr(line, "workspace", "")))
                try:
                    check_line(line, seen, latest)
                except Refused as exc:
                    if place is None:
                        raise InputError("workspace: not one the header counts") from exc
                    refused[exc.reason] += 1
                    place.refuse(line)
                    continue
                if place is None:
                    raise InputError("workspace: not one the header counts")
                if isinstance(line, MemoryLine):
                    place.memories.append(line)
                    place.numbers[line.id] = number
                elif isinstance(line, SourceLine):
                    place.sources.append(line)
                elif isinstance(line, FactLine):
                    place.facts.append(line)
            except UnicodeDecodeError as exc:
                raise InputError(f"import: line {number}: not UTF-8 ({exc.reason})") from exc
            except ValueError as exc:  # JSON, and pydantic's ValidationError
                why = first_error(exc) if isinstance(exc, ValidationError) else str(exc)
                raise InputError(f"import: line {number}: not a valid line ({why})") from exc
            except InputError as exc:
                raise InputError(f"import: line {number}: {exc}") from exc
    if header is None:
        raise InputError(f"import: line 1: {path} is empty; not an Imprint export")
    if not _counts_match(header, workspaces, refused[TOO_LONG]):
        counted = {ws: c.model_dump() for ws, c in header.workspaces.items()}
        held = {ws: w.counts().model_dump() for ws, w in workspaces.items()}
        gone = f" ({refused_words(refused)})" if refused else ""
        raise InputError(
            f"import: line {number + 1}: the file ends after {number} lines, but its "
            f"header counts {counted} and the lines hold {held} beside those refused{gone}: "
            "the file is truncated or edited; nothing was written"
        )
    for ws in header.workspaces:
        _check_links(ws, workspaces[ws])
    return ExportFile(header=header, workspaces=workspaces, lines=number, refused=refused)


def memory_record(line: MemoryLine) -> Record:
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
        symbol=chunk.symbol,
        line_start=chunk.line_start,
        line_end=chunk.line_end,
        head=chunk.head,
    )


def source_records(line: SourceLine) -> tuple[SourceEntry, list[Record]]:
    texts = [c.text for c in line.chunks]
    # The context line as this version indexes it (what a re-index would give).
    lang = line.chunks[0].tags.lang if line.chunks else ""
    contexts = chunk_contexts(line.source, texts, lang, [c.symbol for c in line.chunks])
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
        # Never the file's root: the registry's roots pick a session's project and are read
        # again from disk (a rechunk), so a root from elsewhere could name any folder here.
        root="",
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


def _held_links(writes: Writes, ws: WorkspaceName, ids: list[MemoryId]) -> set[SupersedeLink]:
    deadline = Deadline(600)
    asks = [
        writes.reads.ask(SupersedeLinks(workspace=ws, ids=tuple(ids[i : i + 500])))
        for i in range(0, len(ids), 500)
    ]
    return {link for pending in asks for link in deadline.wait(pending, "import")}


@dataclass
class ImportReport:
    """What an import did; `line()` says it. The seconds are for the benchmark: embedding
    (in this process, batch by batch) and the whole import."""

    parts: list[str] = field(default_factory=list)
    written: int = 0
    kept: int = 0
    # Memories and sources the store holds otherwise than the file, left as they are.
    differ_memories: int = 0
    differ_sources: int = 0
    refused: Counter[str] = field(default_factory=Counter)  # lines not taken, by reason
    embed_seconds: float = 0.0
    seconds: float = 0.0

    def line(self) -> str:
        text = (
            f"imported {'; '.join(self.parts) or 'nothing'}: {self.written} written, "
            f"{self.kept} already there (embedded again with the local model)"
        )
        if self.differ_memories or self.differ_sources:
            text += (
                f"; {self.differ_memories} memories and {self.differ_sources} sources the "
                "store holds otherwise than the file were left as they are (--replace "
                "takes the file's)"
            )
        if self.refused:
            text += f"; {refused_words(self.refused)}"
        return text


class _Batches:
    """Records and source entries gathered into writes of about BATCH_RECORDS records; each
    batch embedded here while the writer applies the one before (one write in flight)."""

    def __init__(self, writes: Writes, ws: WorkspaceName, report: ImportReport, progress: Progress):
        self._writes, self._ws, self._report, self._progress = writes, ws, report, progress
        self._records: list[Record] = []
        self._entries: list[SourceEntry] = []
        self._in_flight: tuple[Pending[WriteAck], int] | None = None

    def add(self, records: list[Record], entry: SourceEntry | None = None) -> None:
        self._records.extend(records)  # a source's chunks and its entry: one write
        if entry is not None:
            self._entries.append(entry)
        if len(self._records) >= BATCH_RECORDS:
            self.flush()

    def send(self, batch: WriteBatch) -> None:
        """Send a batch of something else (facts, links) after the records before it."""
        self.flush()
        self._submit(batch, None, 0)

    def flush(self) -> None:
        if not self._records and not self._entries:
            return
        started = time.perf_counter()
        vectors = self._writes.runtime.embedder().embed([r.indexed_text for r in self._records])
        self._report.embed_seconds += time.perf_counter() - started
        batch = WriteBatch(upserts=tuple(self._records), set_sources=tuple(self._entries))
        self._submit(batch, vectors, len(self._records))
        self._records, self._entries = [], []

    def _submit(self, batch: WriteBatch, vectors: np.ndarray | None, records: int) -> None:
        self.wait()
        self._in_flight = (self._writes.send(self._ws, batch, vectors), records)

    def wait(self) -> None:
        if self._in_flight is None:
            return
        pending, records = self._in_flight
        self._in_flight = None
        Deadline(WRITE_TIMEOUT_SEC).wait(pending, "import write")
        self._report.written += records
        self._progress(records)
        _faults.delay("import.acked")  # a test holds an import here, a batch written


def _same_memory(held: Record, rec: Record) -> bool:
    """Whether a held memory is the file's as an export writes it (its other fields, the
    context line or the source's mtime, are not in a file)."""
    return (
        held.content == rec.content
        and held.project == rec.project
        and exported_fields(held) == exported_fields(rec)
    )


def _foreign(held: Record | None, entry: SourceEntry | None) -> bool:
    """Whether a held record under an id of the file's is another kind of record: a chunk
    for a memory (`entry` None), or a memory or another source's chunk for a chunk."""
    if held is None:
        return False
    if entry is None:
        return held.source_type != "memory"
    return held.source_type == "memory" or (held.project, held.source) != (
        entry.project,
        entry.source,
    )


def _import_workspace(
    writes: Writes,
    ws: WorkspaceName,
    lines: _Workspace,
    report: ImportReport,
    progress: Progress,
    replace: bool = False,
) -> None:
    """Write what the store does not hold; what it holds otherwise than the lines is left
    as it is (counted in `report`) unless `replace`."""
    memories = [memory_record(m) for m in lines.memories]
    sources = [source_records(s) for s in lines.sources]
    ids = [r.id for r in memories] + [r.id for _, recs in sources for r in recs]
    held = _held(writes, ws, ids)
    held_links = _held_links(writes, ws, [r.id for r in memories])
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

    # One id space: a line whose id is held as another kind of record is refused, so that
    # an import never writes a chunk over a memory or a memory over a chunk.
    refused = {r.id for r in memories if _foreign(held.get(r.id), None)}
    report.refused[OTHER_KIND] += len(refused)
    memories = [r for r in memories if r.id not in refused]
    taken, refused_chunks = [], 0
    for (entry, records), was in zip(sources, held_entries, strict=True):
        if any(_foreign(held.get(r.id), entry) for r in records):
            report.refused[OTHER_KIND] += 1
            refused_chunks += len(records)
        else:
            taken.append(((entry, records), was))
    if not report.refused[OTHER_KIND]:
        del report.refused[OTHER_KIND]
    progress(len(refused) + refused_chunks)  # the bar counts every record the header does
    batches = _Batches(writes, ws, report, progress)
    kept = 0
    for rec in memories:
        had = held.get(rec.id)
        same = had is not None and _same_memory(had, rec)
        if had is None or (replace and not same):
            batches.add([rec])
        else:
            kept += 1
            report.differ_memories += not same
    for (entry, records), was in taken:
        # The held entry's root is this computer's own (the file's is never taken).
        same = was is not None and was.model_copy(update={"root": ""}) == entry
        if same and all(held.get(r.id) == r for r in records):
            kept += len(records)
        elif was is not None and not replace:
            # Ingested here since (or from another copy): the store's is the newer truth,
            # and the next ingest or sync of the file brings it up to date either way.
            report.differ_sources += 1
            kept += len(records)
        else:
            root = was.root if was is not None else ""  # this store's own, if it has one
            batches.add(records, entry.model_copy(update={"root": root}))
    # Links after the records they join, so a link never names a memory not yet there.
    wanted = [link for link in lines.links() if not {link.old, link.new} & refused]
    links = [link for link in wanted if link not in held_links]
    for start in range(0, len(links), 500):
        batches.send(WriteBatch(supersede=tuple(links[start : start + 500])))
    new_facts = tuple(f for f, was in zip(facts, held_facts, strict=True) if was != f)
    for start in range(0, len(new_facts), 500):
        batches.send(WriteBatch(add_facts=new_facts[start : start + 500]))
    batches.flush()
    batches.wait()
    progress(kept)
    report.written += len(links) + len(new_facts)
    report.kept += kept + len(wanted) - len(links) + len(facts) - len(new_facts)


def import_file(
    writes: Writes,
    parsed: ExportFile,
    workspace: str = "",
    progress: Progress | None = None,
    replace: bool = False,
) -> ImportReport:
    """Write a checked export into this data dir; `.line()` says what was written.

    A memory or source the store holds otherwise than the file is left as it is (and
    counted) unless `replace`, which writes the file's.

    An export of one workspace goes into `workspace` (empty: the active one); an export of
    several goes into workspaces of their own names, and naming one is refused."""
    started = time.perf_counter()
    names = sorted(parsed.workspaces)
    if len(names) > 1 and workspace:
        raise InputError(
            f"workspace: the file holds {len(names)} workspaces ({', '.join(names)}); "
            "each is imported into its own name, so name none"
        )
    targets = {
        name: writes.open(workspace if len(names) == 1 else name, create=True) for name in names
    }
    report = ImportReport(refused=Counter(parsed.refused))
    if progress is not None:  # the lines refused as the file was read, done with already
        progress(sum(w.refused.memories + w.refused.chunks for w in parsed.workspaces.values()))
    for name in names:
        lines = parsed.workspaces[name]
        _import_workspace(
            writes, targets[name], lines, report, progress or (lambda _: None), replace
        )
        c = lines.counts()
        report.parts.append(
            f"{targets[name]}: {c.memories} memories ({len(lines.links())} supersede links), "
            f"{c.sources} sources ({c.chunks} chunks), {c.facts} facts"
        )
    report.seconds = time.perf_counter() - started
    return report
