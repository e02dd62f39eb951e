"""neighbors rows: the records nearest in meaning to one record."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from imprint.actors.deadline import Deadline
from imprint.actors.read_messages import FetchRecords, Neighbors, SupersedeLinks
from imprint.errors import InputError
from imprint.reads.gateway import Reads
from imprint.reads.layout import clamp
from imprint.reads.memory import check_id
from imprint.reads.search import SearchHit
from imprint.types import MemoryId, WorkspaceName

__all__ = ["NeighborsArgs", "neighbor_rows", "superseded_among"]


class NeighborsArgs(BaseModel):
    """neighbors' arguments: up to k (1-30) records nearest to the record `id`."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    id: str
    k: int = 10


def neighbor_rows(reads: Reads, ws: WorkspaceName, args: NeighborsArgs) -> list[SearchHit]:
    """Up to k (1-30) records nearest to the record `id`, best first; superseded memories
    left out (the k are asked for beyond them)."""
    rid = check_id(args.id)
    k = clamp(args.k, 1, 30)
    with reads.deadline() as deadline:
        known = deadline.wait(reads.ask(FetchRecords(workspace=ws, ids=(rid,))), "neighbors")
        if rid not in known:
            raise InputError(f"id: no record {rid!r} in workspace {ws!r}; use an id from search")
        hits = deadline.wait(reads.ask(Neighbors(workspace=ws, id=rid, k=k)), "neighbors")
        old = superseded_among(reads, ws, [h for h, _ in hits], deadline)
        if old:
            wider = Neighbors(workspace=ws, id=rid, k=k + len(old))
            hits = deadline.wait(reads.ask(wider), "neighbors")
            old |= superseded_among(reads, ws, [h for h, _ in hits], deadline)
            hits = [(h, s) for h, s in hits if h not in old][:k]
        records = deadline.wait(
            reads.ask(FetchRecords(workspace=ws, ids=tuple(h for h, _ in hits))), "neighbors"
        )
    return [SearchHit(record=records[h], score=s) for h, s in hits if h in records]


def superseded_among(
    reads: Reads, ws: WorkspaceName, ids: list[MemoryId], deadline: Deadline
) -> set[MemoryId]:
    """Those of `ids` that a newer memory supersedes."""
    links = deadline.wait(reads.ask(SupersedeLinks(workspace=ws, ids=tuple(ids))), "supersede")
    wanted = set(ids)
    return {link.old for link in links if link.old in wanted}
