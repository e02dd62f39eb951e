"""list_sources rows: what has been ingested, with chunk counts."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from imprint.actors.read_messages import ListSources
from imprint.reads.gateway import Reads
from imprint.reads.layout import clamp
from imprint.store.records import SourceRow
from imprint.types import WorkspaceName

__all__ = ["ListSourcesArgs", "source_rows"]


class ListSourcesArgs(BaseModel):
    """list_sources' arguments: sources of one project, language or layer; limit 1-200."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    project: str = ""
    lang: str = ""
    layer: str = ""
    limit: int = 50


def source_rows(
    reads: Reads, workspace: WorkspaceName, args: ListSourcesArgs
) -> tuple[list[SourceRow], int]:
    """Sources (up to `limit`, 1-200) with their chunk counts, and how many match in all."""
    query = ListSources(
        workspace=workspace,
        project=args.project,
        lang=args.lang,
        layer=args.layer,
        limit=clamp(args.limit, 1, 200),
    )
    with reads.deadline() as deadline:
        rows, total = deadline.wait(reads.ask(query), "list_sources")
    return list(rows), int(total)
