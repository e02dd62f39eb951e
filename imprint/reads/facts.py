"""kg_query rows: temporal facts (subject, predicate, object) with their ids and validity."""

from __future__ import annotations

from imprint.actors.read_messages import FactQuery
from imprint.reads.gateway import Reads
from imprint.reads.layout import clamp
from imprint.store.records import Fact

__all__ = ["fact_rows"]


def fact_rows(
    reads: Reads,
    subject: str = "",
    predicate: str = "",
    include_ended: bool = False,
    limit: int = 20,
    workspace: str = "",
) -> list[Fact]:
    """Facts matching subject and predicate (case-insensitive), newest first; limit 1-200."""
    limit = clamp(limit, 1, 200)
    ws = reads.open(workspace)
    query = FactQuery(
        workspace=ws,
        subject=subject.strip(),
        predicate=predicate.strip(),
        include_ended=include_ended,
        limit=limit,
    )
    with reads.deadline() as deadline:
        return deadline.wait(reads.ask(query), "kg_query")
