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
`imprint.daemon.hosting.answer_import`), so its writer stays the store's only one. A file
from elsewhere is untrusted: what `imprint.writes.import_check` refuses is counted by its
reason and the rest goes on.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from imprint import _faults
from imprint.actors.read_messages import FactById, FetchRecords, SourceEntryQuery, SupersedeLinks
from imprint.actors.writer import WriteAck
from imprint.errors import InputError
from imprint.reads.deadline import Deadline, Pending
from imprint.reads.export import (
    ChunkLine,
    MemoryLine,
    SourceLine,
    exported_fields,
)
from imprint.store.context import chunk_contexts
from imprint.store.records import (
    Fact,
    Record,
    SourceEntry,
    SupersedeLink,
    WriteBatch,
    content_sha,
)
from imprint.types import MemoryId, WorkspaceName
from imprint.writes.gateway import WRITE_TIMEOUT_SEC, Writes
from imprint.writes.import_check import OTHER_KIND, ExportFile, WorkspaceLines, refused_words

__all__ = [
    "BATCH_RECORDS",
    "ImportReport",
    "Progress",
    "import_file",
    "memory_record",
    "source_records",
]

# Records per write: a write holds the writer for about this many embeddings.
BATCH_RECORDS = 64

# Called with how many more records were handled (written, or found already there).
Progress = Callable[[int], None]


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
    lines: WorkspaceLines,
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
