"""The read row functions on the storage seam: what the team server's tools answer from.

The local server's row functions (`reads.search`, `reads.memory`, ...) reach the data through
the reader pools' actor messages; the team server has no actors and no data dir, only a
`MemoryStore` (`imprint.store.seam`) per workspace on PostgreSQL. These functions answer the
same questions from that seam, with the same clamps (one copy: imported from the local row
functions' modules) and the same block layout (`reads.layout`), so a client sees one format
from either server. Ranking: the same weighted reciprocal-rank fusion (`reads.ranking.fuse`)
of the vector and lexical lists (the team store's lexical list already leads with the exact
phrase's matches, so no third list), the same re-rank by coverage and the history prior
(`reads.ranking.rerank`), superseded memories hidden and counted, a session's history after
what replaced it (`reads.search.history_below`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from imprint.errors import InputError
from imprint.reads.layout import Block, clamp, day, meta_line, render_blocks
from imprint.reads.memory import check_id
from imprint.reads.ranking import Fusion, by_source, fuse, rerank
from imprint.reads.search import (
    HINT,
    MAX_CHARS_RANGE,
    SearchHit,
    SearchRows,
    checked_mode,
    format_search,
    history_below,
)
from imprint.store.records import RECORD_TYPES, Filters, check_project
from imprint.store.seam import MemoryStore
from imprint.types import MemoryId

__all__ = [
    "Embed",
    "chunks_text",
    "facts_text",
    "memory_text",
    "neighbors_text",
    "search_store",
    "search_store_text",
    "sources_text",
    "status_text",
    "summary_text",
]

Embed = Callable[[str], np.ndarray]
LIMIT_RANGE = (1, 50)
NEIGHBORS_RANGE = (1, 30)
SOURCES_RANGE = (1, 200)
FACTS_RANGE = (1, 200)
# How far down each list fusion looks, as the local search's candidate pool.
CANDIDATES = 50


def _filters(project: str, type: str, lang: str = "", layer: str = "") -> Filters:
    check_project(project)
    if type and type not in RECORD_TYPES:
        raise InputError(f"type: {type!r} is not allowed; one of {', '.join(RECORD_TYPES)}")
    return Filters(project=project, type=type, lang=lang, layer=layer)


def _superseded_by(store: MemoryStore, ids: list[MemoryId]) -> dict[MemoryId, MemoryId]:
    return {link.old: link.new for link in store.supersede_links(ids) if link.old in ids}


def search_store(
    store: MemoryStore,
    embed: Embed,
    query: str,
    *,
    project: str = "",
    type: str = "",
    lang: str = "",
    layer: str = "",
    limit: int = 10,
    mode: str = "hybrid",
    include_superseded: bool = False,
) -> SearchRows:
    """Rows for one search of one workspace: fused vector and lexical ranks, in hybrid mode
    re-ranked by coverage and the history prior as the local search re-ranks, one hit per
    source, superseded memories hidden (counted) unless asked for."""
    text = query.strip() if isinstance(query, str) else ""
    if not text:
        raise InputError("query: must be non-empty text")
    chosen = checked_mode(mode) or "hybrid"
    filters = _filters(project, type, lang, layer)
    limit = clamp(limit, *LIMIT_RANGE)
    pool = max(CANDIDATES, limit * 3)
    vector = store.query(embed(text), pool, filters) if chosen != "lexical" else None
    lexical = store.match(text, pool, filters) if chosen != "semantic" else None
    fusion = Fusion()  # the `search.*` defaults: the team server reads no search settings
    fused = fuse(vector, lexical, None, fusion)
    records = store.fetch([rid for rid, _, _ in fused])
    ranked = [c for c in fused if c[0] in records]
    if chosen == "hybrid":
        # benchmark.team_lookups (120 lookups on the corpus): top-1 65 -> 67 of 80 tuned
        # (local 68), 32 -> 34 of 40 held out (local 34).
        ranked = rerank(text, ranked, records, fusion)
    replaced = _superseded_by(store, [rid for rid, _, _ in ranked])
    hidden = 0
    if not include_superseded:
        hidden = sum(1 for rid, _, _ in ranked[:limit] if rid in replaced)
        ranked = [c for c in ranked if c[0] not in replaced]
        ranked = history_below(ranked, records, replaced)
    hits = tuple(
        SearchHit(record=records[rid], score=score, superseded_by=replaced.get(rid), also=also)
        for rid, score, _, also in by_source(ranked, records, limit)
    )
    return SearchRows(query=text, mode=chosen, hits=hits, superseded=hidden)


def search_store_text(
    store: MemoryStore, embed: Embed, query: str, max_chars: int = 4000, **kwargs: object
) -> str:
    rows = search_store(store, embed, query, **kwargs)  # type: ignore[arg-type]
    return format_search(rows, clamp(max_chars, *MAX_CHARS_RANGE))


def memory_text(store: MemoryStore, id: str) -> str:
    """The whole record, its tags, and what replaced it, if anything did."""
    rid = check_id(id)
    record = store.fetch([rid]).get(rid)
    if record is None:
        raise InputError(f"id: no record {rid!r} in workspace {store.name!r}")
    replaced = _superseded_by(store, [rid]).get(rid)
    tags = ", ".join(
        f"{k}={v}"
        for k, v in (
            ("lang", record.lang),
            ("layer", record.layer),
            ("kind", record.kind),
            ("domains", ",".join(record.domains)),
            ("topics", ",".join(record.topics)),
        )
        if v
    )
    return "\n".join(
        [meta_line(record, None, replaced), f"tags: {tags or '-'}", "", record.shown_text]
    )


def neighbors_text(store: MemoryStore, id: str, k: int = 10, max_chars: int = 4000) -> str:
    """The records nearest to one record, as search blocks."""
    rid = check_id(id)
    if rid not in store.fetch([rid]):
        raise InputError(f"id: no record {rid!r} in workspace {store.name!r}")
    near = store.neighbors(rid, clamp(k, *NEIGHBORS_RANGE))
    records = store.fetch([n for n, _ in near])
    blocks = [
        Block(meta=meta_line(records[n], score), content=records[n].shown_text)
        for n, score in near
        if n in records
    ]
    return render_blocks(
        [f"neighbors of {rid}: {len(blocks)} results"],
        blocks,
        clamp(max_chars, *MAX_CHARS_RANGE),
        hint=HINT,
    )


def chunks_text(
    store: MemoryStore, source: str, start: int = 0, end: int = 5, project: str = ""
) -> str:
    """Chunks start..end (inclusive) of one source, with the source's true total."""
    if not isinstance(source, str) or not source.strip():
        raise InputError("source: must name a source; list_sources shows them")
    check_project(project)
    if start < 0 or end < start:
        raise InputError(f"start/end: {start}..{end} is not a range; 0 <= start <= end")
    end = min(end, start + 49)
    chunks, total = store.source_chunks(project, source.strip(), start, end)
    if not chunks:
        return f"{source}: no chunks {start}..{end} (it has {total})"
    lines = [f"{source}: chunks {chunks[0].chunk_index}..{chunks[-1].chunk_index} of {total}"]
    for record in chunks:
        lines += ["", meta_line(record), record.shown_text]
    return "\n".join(lines)


def summary_text(store: MemoryStore, source: str, project: str = "") -> str:
    """One source's chunk count, tags, mtime and a preview."""
    check_project(project)
    entry = store.source_entry(project, source)
    chunks, total = store.source_chunks(project, source, 0, 0)
    if entry is None and not chunks:
        raise InputError(f"source: no source {source!r} in workspace {store.name!r}")
    mtime = entry.mtime if entry is not None else 0.0
    preview = chunks[0].shown_text[:300] if chunks else ""
    first = chunks[0] if chunks else None
    tags = f"lang={first.lang or '-'} layer={first.layer or '-'}" if first else "-"
    return "\n".join(
        [f"{source}: {total} chunks, {tags}, mtime {day(mtime) if mtime else '-'}", preview]
    )


def sources_text(
    store: MemoryStore, project: str = "", lang: str = "", layer: str = "", limit: int = 50
) -> str:
    """Sources with their chunk counts, and how many there are in all."""
    check_project(project)
    rows, total = store.list_sources(project, lang, layer, clamp(limit, *SOURCES_RANGE))
    lines = [f"{total} sources" + (f" ({len(rows)} shown)" if len(rows) < total else "")]
    lines += [f"{r.project or '-'} | {r.source} | {r.chunks} chunks" for r in rows]
    return "\n".join(lines)


def facts_text(
    store: MemoryStore,
    subject: str = "",
    predicate: str = "",
    include_ended: bool = False,
    limit: int = 20,
) -> str:
    """Facts with their ids, validity and source."""
    facts = store.facts(
        subject.strip(), predicate.strip(), include_ended, clamp(limit, *FACTS_RANGE)
    )
    if not facts:
        return "no facts"
    return "\n".join(
        f"fact:{f.id} | {f.subject} | {f.predicate} | {f.object} | from {day(f.valid_from)}"
        + (f" | ended {day(f.ended)}" if f.ended is not None else "")
        + (f" | {f.source}" if f.source else "")
        for f in facts
    )


def _count(n: int, most: int) -> str:
    return f"more than {most}" if n > most else str(n)


def status_text(store: MemoryStore, workspaces: tuple[str, ...]) -> str:
    """Counts per project of this workspace, and the workspaces this caller reaches."""
    projects = store.projects()
    total = sum(n for _, n in projects)
    lines = [
        f"workspace {store.name}: {total} records (team store, PostgreSQL)",
        *(f"  {name or '-'}: {n}" for name, n in projects),
        f"facts: {_count(len(store.facts('', '', True, FACTS_RANGE[1] + 1)), FACTS_RANGE[1])}",
        f"your workspaces: {', '.join(workspaces)}",
        f"at {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}",
    ]
    return "\n".join(lines)
