"""get_memory rows: one whole record, and where its source is on this computer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from imprint.actors.read_messages import FetchRecords, SourceRoot
from imprint.errors import InputError
from imprint.reads.gateway import Reads
from imprint.store.records import Record
from imprint.types import MemoryId, WorkspaceName

__all__ = ["GetMemoryArgs", "MemoryRow", "check_id", "memory_row"]


class GetMemoryArgs(BaseModel):
    """get_memory's argument: a record id."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    id: str


class MemoryRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    record: Record
    path_context: dict[str, Any]


def check_id(value: str, argument: str = "id") -> MemoryId:
    text = value.strip() if isinstance(value, str) else ""
    if not text or len(text) > 64 or not all(c.isalnum() or c in "-_:" for c in text):
        raise InputError(f"{argument}: {value!r} is not a record id; use an id from search")
    return MemoryId(text)


def memory_row(
    reads: Reads, ws: WorkspaceName, args: GetMemoryArgs, cwd: Path | None = None
) -> MemoryRow:
    """The record with this id, or an error naming the id."""
    rid = check_id(args.id)
    with reads.deadline() as deadline:
        found = deadline.wait(reads.ask(FetchRecords(workspace=ws, ids=(rid,))), "get_memory")
        if rid not in found:
            raise InputError(f"id: no record {rid!r} in workspace {ws!r}; use an id from search")
        record = found[rid]
        root = ""
        if record.source_type == "file" and record.source:
            root = deadline.wait(
                reads.ask(SourceRoot(workspace=ws, project=record.project, source=record.source)),
                "get_memory",
            )
    here = (cwd or Path.cwd()).resolve()
    context: dict[str, Any] = {"working_directory": str(here), "source_exists_here": False}
    if record.source_type == "file" and record.source:
        candidates = [Path(root) / record.source] if root else []
        candidates.append(here / record.source)
        existing = next((p for p in candidates if p.is_file()), None)
        context["source_exists_here"] = existing is not None
        if existing is not None:
            context["path"] = str(existing)
    return MemoryRow(record=record, path_context=context)
