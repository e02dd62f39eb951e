"""file_summary rows: what Imprint holds about one source, without reading it all.

`format_summary` lives here too: recall shows a summary step in the same words.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from imprint.actors.read_messages import SourceChunks, SourceEntryQuery
from imprint.errors import InputError
from imprint.reads.gateway import Reads
from imprint.reads.layout import clip, escape_field, one_line
from imprint.store.records import SourceEntry
from imprint.types import WorkspaceName

__all__ = ["FileSummaryArgs", "SummaryRow", "format_summary", "summary_row"]


class FileSummaryArgs(BaseModel):
    """file_summary's arguments: a source as search shows it, and its project if two share it."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    source: str
    project: str = ""


class SummaryRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    project: str
    source: str
    source_type: str
    chunks: int
    mtime: float
    lang: str
    layer: str
    kind: str
    types: tuple[str, ...]
    topics: tuple[str, ...]
    preview: str
    git: str = ""  # inside a git work tree: the commit indexed at and how the file stands


def _git_line(entry: SourceEntry | None) -> str:
    """The commit a file was indexed at and whether the working copy differs from it, from
    its registry entry (what ingest recorded) and one stat of the file now."""
    if entry is None or not entry.validators:
        return ""
    try:
        held = json.loads(entry.validators)
    except ValueError:
        return ""
    if not isinstance(held, dict) or "commit_blob" not in held:
        return ""
    commit = str(held.get("commit") or "")
    if not held["commit_blob"]:
        state = "untracked at that commit"
    elif held["commit_blob"] == held.get("blob"):
        state = "indexed text is the commit's"
    else:
        state = "indexed text differs from the commit (uncommitted changes)"
    try:
        now = os.stat(Path(entry.root) / entry.source).st_mtime
    except OSError:
        disk = "working copy gone"
    else:
        disk = "working copy as indexed" if now == entry.mtime else "working copy changed since"
    return f"commit {commit[:12] or '(none yet)'}; {state}; {disk}"


def summary_row(reads: Reads, ws: WorkspaceName, args: FileSummaryArgs) -> SummaryRow:
    source, project = args.source, args.project
    if not source.strip():
        raise InputError("source: must be a source path as search shows it (docs/index.md)")
    with reads.deadline() as deadline:
        records, total = deadline.wait(
            reads.ask(SourceChunks(workspace=ws, project=project, source=source)),
            "file_summary",
        )
    if total == 0:
        where = f" in project {project!r}" if project else ""
        raise InputError(f"source: no source {source!r}{where}; list_sources shows what exists")
    first = records[0]
    with reads.deadline() as deadline:
        entry = deadline.wait(
            reads.ask(SourceEntryQuery(workspace=ws, project=first.project, source=source)),
            "file_summary",
        )
    same = [r for r in records if r.project == first.project]
    topics: dict[str, int] = {}
    for r in same:
        for t in r.topics:
            topics[t] = topics.get(t, 0) + 1
    info: dict[str, Any] = {
        "project": first.project,
        "source": source,
        "source_type": first.source_type,
        "chunks": len(same),
        "mtime": first.source_mtime,
        "lang": first.lang,
        "layer": first.layer,
        "kind": first.kind,
        "types": tuple(sorted({r.type for r in same})),
        "topics": tuple(t for t, _ in sorted(topics.items(), key=lambda kv: -kv[1])[:8]),
        "preview": clip(one_line(first.content), 600),
        "git": _git_line(entry),
    }
    return SummaryRow.model_validate(info)


def format_summary(row: SummaryRow) -> str:
    mtime = time.strftime("%Y-%m-%d %H:%M", time.gmtime(row.mtime)) if row.mtime else "-"
    return "\n".join(
        escape_field(line)
        for line in [
            f"{row.source} ({row.project or '-'}, {row.source_type})",
            f"chunks: {row.chunks} (file_chunks reads them by index 0-{row.chunks - 1})",
            f"modified: {mtime} UTC",
            f"tags: lang={row.lang or '-'} layer={row.layer or '-'} kind={row.kind or '-'} "
            f"types={','.join(row.types)}",
            f"topics: {', '.join(row.topics) or '-'}",
            *([f"git: {row.git}"] if row.git else []),
            f"preview: {row.preview}",
        ]
    )
