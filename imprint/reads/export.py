"""The export format (JSON Lines) and `export_lines`, which writes a data dir's workspaces in it.

Line 1 is the header: the format, its version and each workspace's counts. Then, workspace by
workspace (by name): its memories (by id), its ingested sources (by project and name), each
with its chunks' text, and its facts (by id). Every line is one JSON object with sorted keys
and no spaces, so two exports of one store are byte-identical. Nothing from the config (its
keys, a provider's API key) is part of it; neither are vectors: an import embeds again.

The lines, version 4 (each a model below; a field a reader does not know is a corrupt line):
- `{"line":"header","format":"imprint-export","version":4,"workspaces":{NAME:{"memories":M,
  "sources":S,"chunks":C,"facts":F}}}`: what the lines after it hold, workspace by workspace.
- `{"line":"memory","workspace","id","project","content","type","tags":{"lang","layer","kind",
  "domains","topics"},"tagged_by","created_at","supersedes":[{"id","at"}],"superseded_by":
  {"id","at"}|null}`: a supersede link is on both of its memories (the newer one lists the
  older ones it `supersedes`, the older one names the newer as `superseded_by`, `at` the same
  epoch seconds on both); both memories are in the same export.
- `{"line":"source","workspace","project","source","source_type":"file"|"url"|"content",
  "mtime","sha256","root","validators","chunks":[{"id","text","type","tags","tagged_by",
  "created_at","source_mtime","symbol","line_start","line_end","head"}]}`: an ingested source
  with its chunks in order; a code chunk's symbol path and line range (`""`, 0 and 0 for
  prose), and on a later piece of a split definition that definition's signature (`""` else).
- `{"line":"fact","workspace","id","subject","predicate","object","valid_from","ended"|null,
  "source"}`: a fact with its validity (`ended` null while it holds) and where it came from.
Times are epoch seconds (floats). `root` is always "" (a folder of the exporting computer is
neither written nor, by an import, taken). Version 3 was the same without the chunks' `head`;
version 2 also without `symbol`, `line_start` and `line_end`; version 1 also without
`superseded_by` (and with `supersedes` always empty); a reader of version 4 reads all four
(`READ_VERSIONS`).

The workspaces are read from their SQLite files read-only, each in one snapshot
(`imprint.store.dump`), not through the reader actors: the snapshot is what makes an export
consistent while a daemon writes, and it needs neither the daemon nor Chroma.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from imprint.errors import SQLITE_FILE
from imprint.store.dump import Dump, dump
from imprint.store.records import Fact, Record, SourceEntry, SupersedeLink
from imprint.types import WorkspaceName
from imprint.workspaces import workspace_dir

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "READ_VERSIONS",
    "ChunkLine",
    "Counts",
    "ExportLine",
    "FactLine",
    "Header",
    "Link",
    "MemoryLine",
    "SourceLine",
    "Tags",
    "export_lines",
    "line_text",
    "workspace_lines",
]

FORMAT = "imprint-export"
FORMAT_VERSION = 4
# The versions an import reads: 1 had no `superseded_by` and never a link.
READ_VERSIONS = (1, 2, 3, 4)


class ExportLine(BaseModel):
    # A field this version does not know is a corrupt line, not something to drop unseen.
    model_config = ConfigDict(frozen=True, extra="forbid")


class Counts(ExportLine):
    memories: int = 0
    sources: int = 0
    chunks: int = 0
    facts: int = 0


class Header(ExportLine):
    line: Literal["header"] = "header"
    format: str
    version: int
    workspaces: dict[str, Counts]


class Tags(ExportLine):
    lang: str = ""
    layer: str = ""
    kind: str = ""
    domains: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()

    @classmethod
    def of(cls, rec: Record) -> Tags:
        return cls(
            lang=rec.lang, layer=rec.layer, kind=rec.kind, domains=rec.domains, topics=rec.topics
        )


class Link(ExportLine):
    """The other memory of a supersede link, and when the link was made."""

    id: str
    at: float


class MemoryLine(ExportLine):
    line: Literal["memory"] = "memory"
    workspace: str
    id: str
    project: str
    content: str
    type: str
    tags: Tags
    tagged_by: str
    created_at: float
    # Both ends of each supersede link, so either line alone says where it stands.
    supersedes: tuple[Link, ...] = ()
    superseded_by: Link | None = None


class ChunkLine(ExportLine):
    id: str
    text: str
    type: str
    tags: Tags
    tagged_by: str
    created_at: float
    source_mtime: float
    symbol: str = ""
    line_start: int = 0
    line_end: int = 0
    head: str = ""


class SourceLine(ExportLine):
    line: Literal["source"] = "source"
    workspace: str
    project: str
    source: str
    source_type: Literal["file", "url", "content"]
    mtime: float
    sha256: str
    root: str = ""
    validators: str = ""
    chunks: tuple[ChunkLine, ...]


class FactLine(ExportLine):
    line: Literal["fact"] = "fact"
    workspace: str
    id: str
    subject: str
    predicate: str
    object: str
    valid_from: float
    ended: float | None
    source: str


def line_text(line: ExportLine) -> str:
    """One line of the file: sorted keys, no spaces, text as it is (not \\u-escaped)."""
    data = line.model_dump(mode="json")
    return json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n"


def exported_fields(rec: Record) -> dict[str, Any]:
    """The fields a memory line and a chunk share."""
    return {
        "id": rec.id,
        "type": rec.type,
        "tags": Tags.of(rec),
        "tagged_by": rec.tagged_by,
        "created_at": rec.created_at,
    }


def _memory(ws: str, rec: Record, links: list[SupersedeLink]) -> MemoryLine:
    older = tuple(Link(id=k.old, at=k.at) for k in links if k.new == rec.id)
    newer = next((Link(id=k.new, at=k.at) for k in links if k.old == rec.id), None)
    return MemoryLine(
        workspace=ws,
        project=rec.project,
        content=rec.content,
        supersedes=older,
        superseded_by=newer,
        **exported_fields(rec),
    )


def _source(
    ws: str, project: str, source: str, entry: SourceEntry | None, records: list[Record]
) -> SourceLine:
    first = records[0] if records else None
    return SourceLine(
        workspace=ws,
        project=project,
        source=source,
        source_type=entry.source_type if entry else (first.source_type if first else "file"),  # type: ignore[arg-type]
        mtime=entry.mtime if entry else max((r.source_mtime for r in records), default=0.0),
        sha256=entry.sha if entry else "",
        # A folder of this computer: never taken from a file (`writes.imports`), so not
        # written into one either (and an export of an imported store reads the same).
        root="",
        validators=entry.validators if entry else "",
        chunks=tuple(
            ChunkLine(
                text=r.content,
                source_mtime=r.source_mtime,
                symbol=r.symbol,
                line_start=r.line_start,
                line_end=r.line_end,
                head=r.head,
                **exported_fields(r),
            )
            for r in records
        ),
    )


def _fact(ws: str, fact: Fact) -> FactLine:
    return FactLine(workspace=ws, **fact.model_dump())


def workspace_lines(ws: str, snapshot: Dump) -> Iterator[str]:
    memories = list(snapshot.memories())
    ids = {rec.id for rec in memories}
    links: dict[str, list[SupersedeLink]] = {}
    for link in snapshot.links():  # by the older id: each memory's list in one order
        if link.old in ids and link.new in ids:  # a link names two memories, both exported
            links.setdefault(link.old, []).append(link)
            links.setdefault(link.new, []).append(link)
    for rec in memories:
        yield line_text(_memory(ws, rec, links.get(rec.id, [])))
    for project, source, entry, records in snapshot.sources():
        yield line_text(_source(ws, project, source, entry, records))
    for fact in snapshot.facts():
        yield line_text(_fact(ws, fact))


def export_lines(data_dir: Path, workspaces: list[WorkspaceName]) -> Iterator[str]:
    """The export of these workspaces, a line at a time: each read from one snapshot, all
    snapshots taken before the header is written (its counts are theirs)."""
    with ExitStack() as stack:
        snapshots = {
            ws: stack.enter_context(dump(workspace_dir(data_dir, ws) / SQLITE_FILE))
            for ws in sorted(set(workspaces))
        }
        counts = {str(ws): Counts(**snap.counts()) for ws, snap in snapshots.items()}
        yield line_text(Header(format=FORMAT, version=FORMAT_VERSION, workspaces=counts))
        for ws, snapshot in snapshots.items():
            yield from workspace_lines(ws, snapshot)
