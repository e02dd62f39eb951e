"""search rows: hybrid (vector + BM25, reciprocal-rank fusion), semantic or lexical retrieval.

`search_rows` normalizes the arguments and fetches rows through the reader pools;
`format_search` lays them out in the budgeted evidence format. The MCP tool, the CLI and
recall steps all call these, so clamps, filters and the compact layout live here only.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from imprint.actors.read_messages import FetchRecords, LexicalQuery, VectorQuery
from imprint.errors import InputError
from imprint.reads.evidence import Block, clamp, escape_field, one_line, render_blocks
from imprint.reads.gateway import Reads
from imprint.store.records import RECORD_TYPES, Record
from imprint.store.sqlite import Filters, check_query
from imprint.types import MemoryId

__all__ = [
    "HINT",
    "MAX_CHARS_RANGE",
    "MODES",
    "Mode",
    "RankWhy",
    "SearchHit",
    "SearchRows",
    "format_search",
    "meta_line",
    "normalize_max_chars",
    "search_budget",
    "search_explained",
    "search_rows",
    "search_text",
]

Mode = Literal["hybrid", "semantic", "lexical"]
MODES: tuple[str, ...] = ("hybrid", "semantic", "lexical")
MAX_CHARS_RANGE = (1200, 12000)
HINT = "raise max_chars (up to 12000) or narrow with project, type, lang or layer"


class SearchHit(BaseModel):
    model_config = ConfigDict(frozen=True)

    record: Record
    score: float


class SearchRows(BaseModel):
    model_config = ConfigDict(frozen=True)

    query: str
    mode: Mode
    hits: tuple[SearchHit, ...]


def normalize_max_chars(max_chars: int) -> int:
    return clamp(max_chars, *MAX_CHARS_RANGE)


def _check(query: str, mode: str, type: str) -> str:
    text = query.strip() if isinstance(query, str) else ""
    if not text:
        raise InputError("query: must be non-empty text")
    check_query(text, "query")
    if mode not in MODES:
        raise InputError(f"mode: {mode!r} is not allowed; one of {', '.join(MODES)}")
    if type and type not in RECORD_TYPES:
        raise InputError(f"type: {type!r} is not allowed; one of {', '.join(RECORD_TYPES)}")
    return text


def search_budget(reads: Reads, max_chars: int | None) -> int:
    """The caller's budget, else `search.max_chars`; clamped to 1200-12000 either way."""
    if max_chars is None:
        max_chars = reads.runtime.config.search.max_chars
    return normalize_max_chars(max_chars)


def fuse(rankings: list[list[tuple[MemoryId, float]]], k: int) -> list[tuple[MemoryId, float]]:
    """Reciprocal-rank fusion: each list adds 1 / (k + rank) to an id's score."""
    scores: dict[MemoryId, float] = {}
    for ranking in rankings:
        for rank, (rid, _) in enumerate(ranking, start=1):
            scores[rid] = scores.get(rid, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


class RankWhy(BaseModel):
    """Why one hit ranked: its place in each ranking (1-based; None = not in it) and the
    fused score. The dashboard shows it; search's own output does not change."""

    model_config = ConfigDict(frozen=True)

    vector_rank: int | None
    bm25_rank: int | None
    phrase_rank: int | None
    score: float


def search_rows(
    reads: Reads,
    query: str,
    project: str = "",
    type: str = "",
    lang: str = "",
    layer: str = "",
    limit: int | None = None,
    mode: Mode | None = None,
    workspace: str = "",
) -> SearchRows:
    """Rows for a query: records with their scores, best first, at most `limit` (1-50).

    `limit` and `mode` left out (None) come from `search.limit` and `search.mode`; the
    fusion constant is `search.rrf_k`. The tool, the CLI and recall steps all resolve here.
    """
    return search_explained(reads, query, project, type, lang, layer, limit, mode, workspace)[0]


def search_explained(
    reads: Reads,
    query: str,
    project: str = "",
    type: str = "",
    lang: str = "",
    layer: str = "",
    limit: int | None = None,
    mode: Mode | None = None,
    workspace: str = "",
) -> tuple[SearchRows, dict[MemoryId, RankWhy]]:
    """search_rows, and for each hit its rank in each ranking the fusion saw."""
    cfg = reads.runtime.config.search
    mode = cfg.mode if mode is None else mode
    text = _check(query, mode, type)
    limit = clamp(cfg.limit if limit is None else limit, 1, 50)
    ws = reads.open(workspace)
    filters = Filters(project=project, type=type, lang=lang, layer=layer)
    with reads.deadline() as deadline:
        # Candidates beyond `limit` give the fusion something to agree on.
        pool = limit if mode != "hybrid" else min(max(limit * 3, 30), 150)
        vector = lexical = None
        if mode in ("hybrid", "semantic"):
            vector = reads.vector(VectorQuery(workspace=ws, text=text, limit=pool, filters=filters))
        if mode in ("hybrid", "lexical"):
            lexical = reads.lexical(
                LexicalQuery(workspace=ws, text=text, limit=pool, filters=filters)
            )
        phrase = None
        if mode == "hybrid" and len(text.split()) > 1:
            # Exact-phrase matches are a third ranking, so a quoted line from a file wins.
            phrase = reads.lexical(
                LexicalQuery(workspace=ws, text=text, limit=pool, filters=filters, phrase_only=True)
            )
        rankings: list[list[tuple[MemoryId, float]]] = []
        named: dict[str, dict[MemoryId, int]] = {}
        for name, pending in (("vector", vector), ("lexical", lexical), ("phrase", phrase)):
            if pending is not None:
                rankings.append(list(deadline.wait(pending, f"search ({name})")))
                named[name] = {rid: rank for rank, (rid, _) in enumerate(rankings[-1], start=1)}
        ranked = fuse(rankings, cfg.rrf_k) if mode == "hybrid" else rankings[0]
        ranked = ranked[:limit]
        records = deadline.wait(
            reads.fetch(FetchRecords(workspace=ws, ids=tuple(rid for rid, _ in ranked))),
            "search (fetch)",
        )
    hits = tuple(
        SearchHit(record=records[rid], score=score) for rid, score in ranked if rid in records
    )
    why = {
        h.record.id: RankWhy(
            vector_rank=named.get("vector", {}).get(h.record.id),
            bm25_rank=named.get("lexical", {}).get(h.record.id),
            phrase_rank=named.get("phrase", {}).get(h.record.id),
            score=h.score,
        )
        for h in hits
    }
    return SearchRows(query=text, mode=mode, hits=hits), why


def meta_line(record: Record, score: float | None = None) -> str:
    """The provenance of one block: id | project | source#chunk | type [| score]."""
    where = f"{record.source}#{record.chunk_index}" if record.source else "(inline)"
    parts = [escape_field(p) for p in (record.id, record.project or "-", where, record.type)]
    if score is not None:
        parts.append(f"{score:.4f}")
    return " | ".join(parts)


def format_search(rows: SearchRows, max_chars: int = 4000, *, clamp: bool = True) -> str:
    """`clamp=False` lets recall fit a note line in front within the caller's budget."""
    max_chars = normalize_max_chars(max_chars) if clamp else max_chars
    shown_query = one_line(rows.query)
    if len(shown_query) > 200:
        shown_query = shown_query[:199] + "…"
    if not rows.hits:
        return f'search "{shown_query}" ({rows.mode}): no results'
    prelude = [f'search "{shown_query}" ({rows.mode}): {len(rows.hits)} results']
    blocks = [Block(meta=meta_line(h.record, h.score), content=h.record.content) for h in rows.hits]
    return render_blocks(prelude, blocks, max_chars, hint=HINT)


def search_text(
    reads: Reads,
    query: str,
    project: str = "",
    type: str = "",
    lang: str = "",
    layer: str = "",
    limit: int | None = None,
    mode: Mode | None = None,
    max_chars: int | None = None,
    workspace: str = "",
) -> str:
    """What the MCP tool and `imprint search` both print; None = the `search` config."""
    rows = search_rows(reads, query, project, type, lang, layer, limit, mode, workspace)
    return format_search(rows, search_budget(reads, max_chars))
