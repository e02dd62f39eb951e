"""search rows: hybrid (vector + BM25, reciprocal-rank fusion), semantic or lexical retrieval.

`search_rows` normalizes the arguments and fetches rows through the reader pools;
`format_search` lays them out in the budgeted evidence format. The MCP tool, the CLI and
recall steps all call these, so clamps, filters and the compact layout live here only.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from imprint.actors.read_messages import FetchRecords, LexicalQuery, VectorQuery
from imprint.errors import DeadlineExceeded, InputError
from imprint.logs import get_logger
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
    "SearchHit",
    "SearchRows",
    "format_search",
    "meta_line",
    "normalize_max_chars",
    "search_rows",
    "search_text",
]

Mode = Literal["hybrid", "semantic", "lexical"]
MODES: tuple[str, ...] = ("hybrid", "semantic", "lexical")
log = get_logger(__name__)

MAX_CHARS_RANGE = (1200, 12000)
RRF_K = 60
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
    warning: str = ""  # one line: a failed index was left out of these results


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


def fuse(
    rankings: list[list[tuple[MemoryId, float]]], k: int = RRF_K
) -> list[tuple[MemoryId, float]]:
    """Reciprocal-rank fusion: each list adds 1 / (k + rank) to an id's score."""
    scores: dict[MemoryId, float] = {}
    for ranking in rankings:
        for rank, (rid, _) in enumerate(ranking, start=1):
            scores[rid] = scores.get(rid, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def search_rows(
    reads: Reads,
    query: str,
    project: str = "",
    type: str = "",
    lang: str = "",
    layer: str = "",
    limit: int = 10,
    mode: Mode = "hybrid",
    workspace: str = "",
) -> SearchRows:
    """Rows for a query: records with their scores, best first, at most `limit` (1-50)."""
    text = _check(query, mode, type)
    limit = clamp(limit, 1, 50)
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
        warning = ""
        if vector is not None:
            try:
                rankings.append(list(deadline.wait(vector, "search (vector)")))
            except (InputError, DeadlineExceeded):
                raise
            except Exception as exc:
                if mode != "hybrid":
                    raise
                # A damaged vector index must not take search down: the lexical side answers.
                why = one_line(f"{exc.__class__.__name__}: {exc}")[:160]  # `type` is an argument
                warning = (
                    f"warning: the vector index failed ({why}); lexical results only; "
                    "run `imprint status --check`, then `imprint repair`"
                )
        if lexical is not None:
            rankings.append(list(deadline.wait(lexical, "search (lexical)")))
        if phrase is not None:
            rankings.append(list(deadline.wait(phrase, "search (phrase)")))
        ranked = fuse(rankings, RRF_K) if mode == "hybrid" else rankings[0]
        if warning:
            log.warning("search.vector_failed", workspace=ws, error=warning)
        ranked = ranked[:limit]
        records = deadline.wait(
            reads.fetch(FetchRecords(workspace=ws, ids=tuple(rid for rid, _ in ranked))),
            "search (fetch)",
        )
    hits = tuple(
        SearchHit(record=records[rid], score=score) for rid, score in ranked if rid in records
    )
    orphans = len(ranked) - len(hits)
    if orphans and not warning:
        # Vectors whose records are gone (a damaged lexical side): shown, not silently lost.
        warning = (
            f"warning: {orphans} results had no record (the indexes disagree); "
            "run `imprint status --check`, then `imprint repair`"
        )
        log.warning("search.orphan_vectors", workspace=ws, count=orphans)
    return SearchRows(query=text, mode=mode, hits=hits, warning=warning)


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
    warning = [rows.warning] if rows.warning else []
    if not rows.hits:
        return "\n".join([*warning, f'search "{shown_query}" ({rows.mode}): no results'])
    prelude = [*warning, f'search "{shown_query}" ({rows.mode}): {len(rows.hits)} results']
    blocks = [Block(meta=meta_line(h.record, h.score), content=h.record.content) for h in rows.hits]
    return render_blocks(prelude, blocks, max_chars, hint=HINT)


def search_text(
    reads: Reads,
    query: str,
    project: str = "",
    type: str = "",
    lang: str = "",
    layer: str = "",
    limit: int = 10,
    mode: Mode = "hybrid",
    max_chars: int = 4000,
    workspace: str = "",
) -> str:
    """What the MCP tool and `imprint search` both print."""
    rows = search_rows(reads, query, project, type, lang, layer, limit, mode, workspace)
    return format_search(rows, max_chars)
