"""get_memory rows: one whole record, and where its source is on this computer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from imprint.actors.read_messages import FetchRecords, SourceRoot, SupersedeLinks
from imprint.errors import InputError
from imprint.reads.gateway import Reads
from imprint.store.records import Record, SupersedeLink
from imprint.types import MemoryId, WorkspaceName

__all__ = ["MAX_CHAIN", "GetMemoryArgs", "MemoryRow", "check_id", "memory_row", "supersede_chain"]

# How far a supersede chain is followed each way (a page of it, not the whole history).
MAX_CHAIN = 20


class GetMemoryArgs(BaseModel):
    """get_memory's argument: a record id."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    id: str


class MemoryRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    record: Record
    path_context: dict[str, Any]
    superseded_by: SupersedeLink | None = None  # the newer memory that replaces this one
    supersedes: tuple[SupersedeLink, ...] = ()  # the older memories this one replaces


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
        links: list[SupersedeLink] = []
        if record.source_type == "memory":
            asked = SupersedeLinks(workspace=ws, ids=(rid,))
            links = deadline.wait(reads.ask(asked), "get_memory")
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
    return MemoryRow(
        record=record,
        path_context=context,
        superseded_by=next((link for link in links if link.old == rid), None),
        supersedes=tuple(link for link in links if link.new == rid),
    )


def supersede_chain(
    reads: Reads, ws: WorkspaceName, rid: MemoryId
) -> tuple[list[SupersedeLink], list[SupersedeLink]]:
    """A memory's supersede chain: the links to ever newer memories (nearest first), and
    those to the older ones it replaced, directly or not (nearest first); MAX_CHAIN each."""
    newer: list[SupersedeLink] = []
    older: list[SupersedeLink] = []
    seen = {rid}
    with reads.deadline() as deadline:
        up, down = [rid], [rid]
        while (up or down) and len(newer) + len(older) < 2 * MAX_CHAIN:
            asked = SupersedeLinks(workspace=ws, ids=tuple(up + down))
            links = deadline.wait(reads.ask(asked), "supersede chain")
            above = [k for k in links if k.old in up and k.new not in seen][
                : MAX_CHAIN - len(newer)
            ]
            below = [k for k in links if k.new in down and k.old not in seen]
            below = below[: MAX_CHAIN - len(older)]
            newer += above
            older += below
            up, down = [k.new for k in above], [k.old for k in below]
            seen.update(up + down)
    return newer, older
