"""What each kind of step returns, as evidence items; merged by key, round-robin by rank.

A search step keeps one item per source: later chunks of a source already in its results
are folded into that item's header (`src.md#3 +#2,#5`), so near-duplicate chunks of one
file do not crowd other sources out of a small budget. Every item has a short index line
(`src.md#3 +#2,#5 0.0163`) that recall lists when the budget hides the item's excerpt.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from imprint._shown import counted
from imprint.reads.chunks import ChunkRows
from imprint.reads.layout import escape_field
from imprint.reads.memory import MemoryRow
from imprint.reads.search import SearchHit, SearchRows, meta_line
from imprint.reads.summary import SummaryRow, format_summary
from imprint.store.records import Fact, Record, SourceRow
from imprint.types import Outcome

__all__ = [
    "Item",
    "StepResult",
    "chunk_items",
    "fact_items",
    "file_key",
    "memory_items",
    "merge",
    "neighbor_items",
    "search_items",
    "source_items",
    "summary_items",
]


class Item(BaseModel):
    """One piece of evidence: its merge key, its provenance line, its text."""

    model_config = ConfigDict(frozen=True)

    key: str
    meta: str
    content: str
    index: str = ""  # the short line that names it when its excerpt is hidden


class StepResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    index: int
    label: str
    outcome: Outcome  # ok, error, timeout
    detail: str  # "10 results", or the one-line error
    items: tuple[Item, ...] = ()
    run_ms: float = 0.0
    # A search step's rows: a recall whose planning failed prints its baseline search exactly
    # as `search` would, from the rows gathered while the model planned.
    rows: SearchRows | None = None


def file_key(project: str, source: str) -> str:
    """The merge key of a whole source: the same path in two projects is two sources."""
    return f"file:{project or '-'}:{source}"


def _record(record: Record, score: float | None = None, folded: Sequence[int] = ()) -> Item:
    meta = meta_line(record, score, also=folded)  # the folded chunks as search shows them
    where = f"{record.source}#{record.chunk_index}" if record.source else record.id
    if folded:
        where += " +" + ",".join(f"#{c}" for c in folded)
    index = where if score is None else f"{where} {score:.4f}"
    return Item(key=record.id, meta=meta, content=record.shown_text, index=index)


def _folded(hits: Sequence[SearchHit]) -> list[Item]:
    """One item per source, at its best-ranked chunk; the other chunks named in its header."""
    first: dict[str, int] = {}
    groups: list[tuple[SearchHit, list[int]]] = []
    for hit in hits:
        source = hit.record.source
        if source and source in first:
            groups[first[source]][1].append(hit.record.chunk_index)
            continue
        if source:
            first[source] = len(groups)
        groups.append((hit, list(hit.also)))
    return [_record(hit.record, hit.score, folded) for hit, folded in groups]


def _fact(fact: Fact) -> Item:
    since = time.strftime("%Y-%m-%d", time.gmtime(fact.valid_from))
    ended = f", ended {time.strftime('%Y-%m-%d', time.gmtime(fact.ended))}" if fact.ended else ""
    return Item(
        key=f"fact:{fact.id}",
        meta=escape_field(f"fact:{fact.id} | {fact.source or '-'} | fact | {since}"),
        content=f"{fact.subject} | {fact.predicate} | {fact.object} (since {since}{ended})",
        index=f"fact:{fact.id} {fact.source or '-'}",
    )


def search_items(rows: SearchRows) -> tuple[list[Item], str]:
    """A search step's evidence, best first (one item per source), and its count."""
    items = _folded(rows.hits)
    folded = len(rows.hits) - len(items)
    more = f", {folded} folded" if folded else ""
    return items, f"{len(rows.hits)} results{more}"


def neighbor_items(hits: list[SearchHit]) -> tuple[list[Item], str]:
    return [_record(h.record, h.score) for h in hits], f"{len(hits)} neighbours"


def memory_items(row: MemoryRow) -> tuple[list[Item], str]:
    return [_record(row.record)], "1 record"


def chunk_items(rows: ChunkRows) -> tuple[list[Item], str]:
    items = [_record(r) for r in rows.records]
    return items, f"{len(items)} of {counted(rows.total, 'chunk')}"


def summary_items(row: SummaryRow) -> tuple[list[Item], str]:
    item = Item(
        key=file_key(row.project, row.source),
        meta=escape_field(
            f"file:{row.source} | {row.project or '-'} | {counted(row.chunks, 'chunk')} | summary"
        ),
        content="\n".join(format_summary(row).splitlines()[1:]),
        index=f"file:{row.source} summary",
    )
    return [item], "summary"


def source_items(listed: list[SourceRow], total: int) -> tuple[list[Item], str]:
    items = [
        Item(
            key=file_key(r.project, r.source),
            meta=escape_field(
                f"file:{r.source} | {r.project or '-'} | {counted(r.chunks, 'chunk')} | source"
            ),
            content=f"{r.source_type} {r.lang or '-'} {r.layer or '-'}",
            index=f"file:{r.source} source",
        )
        for r in listed
    ]
    return items, f"{len(items)} of {counted(total, 'source')}"


def fact_items(facts: list[Fact]) -> tuple[list[Item], str]:
    return [_fact(f) for f in facts], f"{len(facts)} facts"


def merge(results: list[StepResult]) -> list[Item]:
    """Round-robin by rank across steps in order; a repeated key keeps the longer content."""
    merged: dict[str, Item] = {}
    depth = max((len(r.items) for r in results), default=0)
    for rank in range(depth):
        for result in results:
            if rank >= len(result.items):
                continue
            item = result.items[rank]
            kept = merged.get(item.key)
            if kept is None:
                merged[item.key] = item
            elif len(item.content) > len(kept.content):
                # Same place in the order, fuller text.
                merged[item.key] = kept.model_copy(update={"content": item.content})
    return list(merged.values())
