"""list_sources rows: what has been ingested, with chunk counts."""

from __future__ import annotations

from imprint.actors.read_messages import ListSources
from imprint.reads.gateway import Reads
from imprint.reads.layout import clamp
from imprint.store.records import SourceRow

__all__ = ["source_rows"]


def source_rows(
    reads: Reads,
    project: str = "",
    lang: str = "",
    layer: str = "",
    limit: int = 50,
    workspace: str = "",
) -> tuple[list[SourceRow], int]:
    """Sources (up to `limit`, 1-200) with their chunk counts, and how many match in all."""
    limit = clamp(limit, 1, 200)
    ws = reads.open(workspace)
    query = ListSources(workspace=ws, project=project, lang=lang, layer=layer, limit=limit)
    with reads.deadline() as deadline:
        rows, total = deadline.wait(reads.ask(query), "list_sources")
    return list(rows), int(total)
