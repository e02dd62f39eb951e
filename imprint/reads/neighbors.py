"""neighbors rows: the records nearest in meaning to one record."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from imprint.actors.read_messages import FetchRecords, Neighbors
from imprint.errors import InputError
from imprint.reads.gateway import Reads
from imprint.reads.layout import clamp
from imprint.reads.memory import check_id
from imprint.reads.search import SearchHit
from imprint.types import WorkspaceName

__all__ = ["NeighborsArgs", "neighbor_rows"]


class NeighborsArgs(BaseModel):
    """neighbors' arguments: up to k (1-30) records nearest to the record `id`."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    id: str
    k: int = 10


def neighbor_rows(reads: Reads, ws: WorkspaceName, args: NeighborsArgs) -> list[SearchHit]:
    """Up to k (1-30) records nearest to the record `id`, best first."""
    rid = check_id(args.id)
    k = clamp(args.k, 1, 30)
    with reads.deadline() as deadline:
        known = deadline.wait(reads.ask(FetchRecords(workspace=ws, ids=(rid,))), "neighbors")
        if rid not in known:
            raise InputError(f"id: no record {rid!r} in workspace {ws!r}; use an id from search")
        hits = deadline.wait(reads.ask(Neighbors(workspace=ws, id=rid, k=k)), "neighbors")
        records = deadline.wait(
            reads.ask(FetchRecords(workspace=ws, ids=tuple(h for h, _ in hits))), "neighbors"
        )
    return [SearchHit(record=records[h], score=s) for h, s in hits if h in records]
