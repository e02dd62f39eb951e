"""kg_query rows: temporal facts (subject, predicate, object) with their ids and validity."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from imprint.actors.read_messages import FactQuery
from imprint.reads.gateway import Reads
from imprint.reads.layout import clamp
from imprint.store.records import Fact
from imprint.types import WorkspaceName

__all__ = ["KgQueryArgs", "fact_rows"]


class KgQueryArgs(BaseModel):
    """kg_query's arguments: facts by subject and predicate (case-insensitive), limit 1-200."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    subject: str = ""
    predicate: str = ""
    include_ended: bool = False
    limit: int = 20


def fact_rows(reads: Reads, workspace: WorkspaceName, args: KgQueryArgs) -> list[Fact]:
    """Facts matching subject and predicate (case-insensitive), newest first; limit 1-200."""
    query = FactQuery(
        workspace=workspace,
        subject=args.subject.strip(),
        predicate=args.predicate.strip(),
        include_ended=args.include_ended,
        limit=clamp(args.limit, 1, 200),
    )
    with reads.deadline() as deadline:
        return deadline.wait(reads.ask(query), "kg_query")
