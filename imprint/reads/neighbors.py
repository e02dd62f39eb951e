"""neighbors rows: the records nearest in meaning to one record."""

from __future__ import annotations

from imprint.actors.read_messages import FetchRecords, Neighbors
from imprint.errors import InputError
from imprint.reads.gateway import Reads
from imprint.reads.layout import clamp
from imprint.reads.memory import check_id
from imprint.reads.search import SearchHit

__all__ = ["neighbor_rows"]


def neighbor_rows(reads: Reads, id: str, k: int = 10, workspace: str = "") -> list[SearchHit]:
    """Up to k (1-30) records nearest to the record `id`, best first."""
    rid = check_id(id)
    k = clamp(k, 1, 30)
    ws = reads.open(workspace)
    with reads.deadline() as deadline:
        known = deadline.wait(reads.ask(FetchRecords(workspace=ws, ids=(rid,))), "neighbors")
        if rid not in known:
            raise InputError(f"id: no record {rid!r} in workspace {ws!r}; use an id from search")
        hits = deadline.wait(reads.ask(Neighbors(workspace=ws, id=rid, k=k)), "neighbors")
        records = deadline.wait(
            reads.ask(FetchRecords(workspace=ws, ids=tuple(h for h, _ in hits))), "neighbors"
        )
    return [SearchHit(record=records[h], score=s) for h, s in hits if h in records]
