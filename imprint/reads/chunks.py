"""file_chunks rows: a range of one source's chunks, in order, with the true total."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from imprint.actors.read_messages import SourceChunks
from imprint.errors import InputError
from imprint.reads.gateway import Reads
from imprint.store.records import Record
from imprint.types import WorkspaceName

__all__ = ["ChunkRows", "FileChunksArgs", "chunk_rows"]

MAX_RANGE = 50
MAX_INDEX = 1_000_000  # far beyond any source's chunks; SQLite integers end at 2**63


class FileChunksArgs(BaseModel):
    """file_chunks' arguments: chunks start..end (inclusive; end -1 = start + 9) of `source`."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    source: str
    start: int = 0
    end: int = -1
    project: str = ""


class ChunkRows(BaseModel):
    model_config = ConfigDict(frozen=True)

    source: str
    start: int
    end: int
    total: int
    records: tuple[Record, ...]


def chunk_rows(reads: Reads, workspace: WorkspaceName, args: FileChunksArgs) -> ChunkRows:
    """Chunks start..end (inclusive; end -1 = start + 9) of `source`, at most 50 at once."""
    source, start, end, project = args.source, args.start, args.end, args.project
    if not source.strip():
        raise InputError("source: must be a source path as search shows it (docs/index.md)")
    if not 0 <= start <= MAX_INDEX:
        raise InputError(f"start: {start} is not allowed; a chunk index 0-{MAX_INDEX}")
    end = start + 9 if end < 0 else end
    if end < start:
        raise InputError(f"end: {end} is not allowed; >= start ({start}), or -1")
    end = min(end, start + MAX_RANGE - 1)
    query = SourceChunks(workspace=workspace, project=project, source=source, start=start, end=end)
    with reads.deadline() as deadline:
        records, total = deadline.wait(reads.ask(query), "file_chunks")
    if total == 0:
        where = f" in project {project!r}" if project else ""
        raise InputError(f"source: no source {source!r}{where}; list_sources shows what exists")
    return ChunkRows(source=source, start=start, end=end, total=total, records=tuple(records))
