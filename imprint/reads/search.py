"""search rows: hybrid (vector + BM25, reciprocal-rank fusion), semantic or lexical retrieval.

`search_rows` normalizes the arguments and fetches rows through the reader pools;
`format_search` lays them out in the budgeted evidence format. The MCP tool, the CLI and
recall steps all call these, so clamps, filters and the compact layout live here only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict

from imprint.actors.read_messages import FetchRecords, LexicalAndPhrase, LexicalQuery, VectorQuery
from imprint.config import SearchConfig
from imprint.errors import DeadlineExceeded, InputError
from imprint.logs import get_logger
from imprint.reads.deadline import Deadline, Pending
from imprint.reads.gateway import Reads
from imprint.reads.layout import Block, clamp, escape_field, one_line, render_blocks
from imprint.store.lexical import check_query
from imprint.store.records import RECORD_TYPES, Filters, Record
from imprint.store.text import content_terms, holds_term
from imprint.types import MemoryId, WorkspaceName

__all__ = [
    "HINT",
    "MAX_CHARS_RANGE",
    "MODES",
    "Fusion",
    "Mode",
    "SearchHit",
    "SearchRows",
    "Why",
    "coverage",
    "format_search",
    "fuse",
    "meta_line",
    "normalize_max_chars",
    "planned_vector_query",
    "rerank",
    "search_budget",
    "search_many",
    "search_rows",
    "search_text",
]

Mode = Literal["hybrid", "semantic", "lexical"]
MODES: tuple[str, ...] = ("hybrid", "semantic", "lexical")
log = get_logger(__name__)

MAX_CHARS_RANGE = (1200, 12000)
HINT = "raise max_chars (up to 12000) or narrow with project, type, lang or layer"
Ranking = list[tuple[MemoryId, float]]


class Why(BaseModel):
    """Why a hit ranked where it did: the numbers the ranking itself used, not a recomputation.

    Ranks are 1-based within each list the search ran (None: not in that list).
    """

    model_config = ConfigDict(frozen=True)

    vector_rank: int | None = None
    lexical_rank: int | None = None
    phrase: bool = False  # the record holds the query's words as one exact phrase
    coverage: float | None = None  # share of the query's terms the chunk holds (hybrid re-rank)
    fused: float  # the final score, the same as the hit's score


class SearchHit(BaseModel):
    model_config = ConfigDict(frozen=True)

    record: Record
    score: float
    why: Why | None = None  # for dashboards and benchmarks; the tool's text never shows it


class Fusion(BaseModel):
    """How hybrid search combines its lists; `search.*` settings, see `SearchConfig`."""

    model_config = ConfigDict(frozen=True)

    rrf_k: int = 5
    vector: float = 1.5
    lexical: float = 1.0
    phrase: float = 1.0
    coverage: float = 0.5
    depth: int = 20

    @classmethod
    def from_config(cls, cfg: SearchConfig) -> Fusion:
        return cls(
            rrf_k=cfg.rrf_k,
            vector=cfg.vector_weight,
            lexical=cfg.lexical_weight,
            phrase=cfg.phrase_weight,
            coverage=cfg.coverage_weight,
            depth=cfg.rerank_depth,
        )


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


class _Asked(NamedTuple):
    """A search's arguments resolved: defaults from `search.*`, query and type checked."""

    mode: Mode
    text: str
    limit: int
    filters: Filters


def _asked(
    cfg: SearchConfig,
    query: str,
    project: str = "",
    type: str = "",
    lang: str = "",
    layer: str = "",
    limit: int | None = None,
    mode: Mode | None = None,
) -> _Asked:
    mode = cfg.mode if mode is None else mode
    return _Asked(
        mode=mode,
        text=_check(query, mode, type),
        limit=clamp(cfg.limit if limit is None else limit, 1, 50),
        filters=Filters(project=project, type=type, lang=lang, layer=layer),
    )


def planned_vector_query(
    reads: Reads, workspace: str, query: str, **args: Any
) -> VectorQuery | None:
    """The vector read `search_rows(reads, query, **args)` sends; None when it sends none
    (lexical mode, or arguments it refuses). A recall primes these before its steps run."""
    try:
        asked = _asked(reads.runtime.config.search, query, **args)
    except InputError:
        return None
    if asked.mode not in ("hybrid", "semantic"):
        return None
    return _vector_query(reads.open(workspace), asked)


def search_budget(reads: Reads, max_chars: int | None) -> int:
    """The caller's budget, else `search.max_chars`; clamped to 1200-12000 either way."""
    if max_chars is None:
        max_chars = reads.runtime.config.search.max_chars
    return normalize_max_chars(max_chars)


def fuse(
    vector: Ranking | None,
    lexical: Ranking | None,
    phrase: Ranking | None,
    fusion: Fusion,
    keep: int | None = None,
) -> list[tuple[MemoryId, float, Why]]:
    """Weighted reciprocal-rank fusion: each list adds weight / (rrf_k + rank) to an id.

    The best `keep` (all when None), each with the ranks that made its score.
    """
    scores: dict[MemoryId, float] = {}
    ranks: list[dict[MemoryId, int]] = []
    for ranking, weight in (
        (vector, fusion.vector),
        (lexical, fusion.lexical),
        (phrase, fusion.phrase),
    ):
        positions: dict[MemoryId, int] = {}
        for rank, (rid, _) in enumerate(ranking or (), start=1):
            positions.setdefault(rid, rank)
            scores[rid] = scores.get(rid, 0.0) + weight / (fusion.rrf_k + rank)
        ranks.append(positions)
    ordered = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:keep]
    by_vector, by_lexical, by_phrase = ranks
    return [
        (
            rid,
            score,
            # Built from trusted values on every search: skip validation.
            Why.model_construct(
                vector_rank=by_vector.get(rid),
                lexical_rank=by_lexical.get(rid),
                phrase=rid in by_phrase,
                coverage=None,
                fused=score,
            ),
        )
        for rid, score in ordered
    ]


def coverage(terms: frozenset[str], record: Record) -> float:
    """The share of a query's content terms that a chunk's text or source path holds."""
    if not terms:
        return 0.0
    text = f"{record.content}\n{record.source}"
    lowered = text.lower()
    return sum(holds_term(text, term, lowered) for term in terms) / len(terms)


def rerank(
    text: str,
    fused: list[tuple[MemoryId, float, Why]],
    records: dict[MemoryId, Record],
    fusion: Fusion,
) -> list[tuple[MemoryId, float, Why]]:
    """Add coverage of the query's terms, worth `coverage` times a first rank in one list."""
    terms = content_terms(text)
    out = []
    for rid, score, why in fused:
        record = records.get(rid)
        if record is None:
            continue
        share = coverage(terms, record)
        final = score + fusion.coverage * share / (fusion.rrf_k + 1)
        out.append((rid, final, why.model_copy(update={"coverage": share, "fused": final})))
    return sorted(out, key=lambda item: (-item[1], item[0]))


def candidates(mode: str, limit: int) -> int:
    """How many hits each list of a search asks for: beyond `limit` in hybrid mode, so the
    fusion has something to agree on."""
    return limit if mode != "hybrid" else min(max(limit * 3, 30), 150)


def _vector_query(workspace: WorkspaceName, asked: _Asked) -> VectorQuery:
    """The vector read of a search (one recall primes these for all its search steps)."""
    return VectorQuery(
        workspace=workspace,
        text=asked.text,
        limit=candidates(asked.mode, asked.limit),
        filters=asked.filters,
    )


class _Sent(NamedTuple):
    """One search's reads, asked and not yet waited for."""

    asked: _Asked
    workspace: WorkspaceName
    vector: Pending[Ranking] | None
    lexical: Pending[Ranking] | None
    both: Pending[tuple[Ranking, Ranking]] | None  # the BM25 ranking and its phrase block


class _Ranked(NamedTuple):
    """One search's candidates, fused, before their records are read."""

    sent: _Sent
    ranked: list[tuple[MemoryId, float, Why]]
    warning: str


def _reranks(mode: Mode, fusion: Fusion) -> bool:
    """Whether a search's candidates are re-ranked by coverage (and so fetched beyond its
    limit, `fusion.depth` of them)."""
    return mode == "hybrid" and fusion.coverage > 0


def _send(reads: Reads, workspace: WorkspaceName, asked: _Asked) -> _Sent:
    mode, text, limit, filters = asked
    pool = candidates(mode, limit)
    vector = lexical = both = None
    if mode in ("hybrid", "semantic"):
        vector = reads.ask(_vector_query(workspace, asked))
    if mode == "hybrid" and len(text.split()) > 1:
        # Exact-phrase matches are a third ranking, so a quoted line from a file wins;
        # they lead the BM25 ranking, so one read gives both lists.
        both = reads.ask(
            LexicalAndPhrase(workspace=workspace, text=text, limit=pool, filters=filters)
        )
    elif mode in ("hybrid", "lexical"):
        lexical = reads.ask(
            LexicalQuery(workspace=workspace, text=text, limit=pool, filters=filters)
        )
    return _Sent(asked, workspace, vector, lexical, both)


def _rank(sent: _Sent, fusion: Fusion, deadline: Deadline) -> _Ranked:
    """Wait for a search's reads (within `deadline`) and fuse them."""
    mode, _, limit, _ = sent.asked
    warning = ""
    got_vector = None
    if sent.vector is not None:
        try:
            got_vector = list(deadline.wait(sent.vector, "search (vector)"))
        except (InputError, DeadlineExceeded):
            raise
        except Exception as exc:
            if mode != "hybrid":
                raise
            # A damaged vector index must not take search down: the lexical side answers.
            failed = one_line(f"{exc.__class__.__name__}: {exc}")[:160]
            warning = (
                f"warning: the vector index failed ({failed}); lexical results only; "
                "run `imprint status --check`, then `imprint repair`"
            )
    got_lexical = got_phrase = None
    if sent.both is not None:
        got_lexical, got_phrase = deadline.wait(sent.both, "search (lexical)")
    elif sent.lexical is not None:
        got_lexical = list(deadline.wait(sent.lexical, "search (lexical)"))
    if warning:
        log.warning("search.vector_failed", workspace=sent.workspace, error=warning)
    keep = max(limit, fusion.depth) if _reranks(mode, fusion) else limit
    if mode == "hybrid":
        ranked = fuse(got_vector, got_lexical, got_phrase, fusion, keep)
    else:
        only = (got_vector if mode == "semantic" else got_lexical) or []
        ranked = [
            (
                rid,
                score,
                Why(
                    vector_rank=rank if mode == "semantic" else None,
                    lexical_rank=rank if mode == "lexical" else None,
                    fused=score,
                ),
            )
            for rank, (rid, score) in enumerate(only, start=1)
        ]
    # The re-rank reads the text of its candidates: fetch them all, keep `limit` after.
    return _Ranked(sent, ranked[:keep], warning)


def _fetch(reads: Reads, ranked: Sequence[_Ranked], deadline: Deadline) -> dict[MemoryId, Record]:
    """The records of these searches' candidates, in one read."""
    ids = dict.fromkeys(rid for one in ranked for rid, _, _ in one.ranked)
    workspace = ranked[0].sent.workspace
    return deadline.wait(
        reads.ask(FetchRecords(workspace=workspace, ids=tuple(ids))), "search (fetch)"
    )


def _rows(one: _Ranked, records: dict[MemoryId, Record], fusion: Fusion) -> SearchRows:
    mode, text, limit, _ = one.sent.asked
    ranked, warning = one.ranked, one.warning
    # Vectors among the first `limit` whose records are gone (a damaged lexical side).
    orphans = sum(1 for rid, _, _ in ranked[:limit] if rid not in records)
    if _reranks(mode, fusion):
        ranked = rerank(text, ranked, records, fusion)[:limit]
    hits = tuple(
        SearchHit(record=records[rid], score=score, why=why)
        for rid, score, why in ranked
        if rid in records
    )
    if orphans and not warning:
        # Vectors whose records are gone (a damaged lexical side): shown, not silently lost.
        warning = (
            f"warning: {orphans} results had no record (the indexes disagree); "
            "run `imprint status --check`, then `imprint repair`"
        )
        log.warning("search.orphan_vectors", workspace=one.sent.workspace, count=orphans)
    return SearchRows(query=text, mode=mode, hits=hits, warning=warning)


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
    fusion from `search.*` (`Fusion.from_config`). The tool, the CLI, recall steps and the
    dashboard all resolve here. Each hit carries `why`: the numbers its ranking used.
    """
    cfg = reads.runtime.config.search
    asked = _asked(cfg, query, project, type, lang, layer, limit, mode)
    ws = reads.open(workspace)
    fusion = Fusion.from_config(cfg)
    with reads.deadline() as deadline:
        ranked = _rank(_send(reads, ws, asked), fusion, deadline)
        records = _fetch(reads, [ranked], deadline)
    return _rows(ranked, records, fusion)


def search_many(
    reads: Reads,
    asks: Sequence[Mapping[str, Any]],
    workspace: str = "",
    bind: Callable[[int], AbstractContextManager[object]] = lambda i: nullcontext(),
) -> list[SearchRows | Exception]:
    """`search_rows(reads, **ask, workspace=workspace)` for each ask, answered together (a
    recall's search steps): every read is asked at once and the candidates' records are
    read in ONE fetch, not one per search. Each result is exactly that search's rows, or
    the exception it raised, in order; `bind(i)` is entered while ask i sends its reads.

    A search whose reads have not answered within half of what is left of the deadline is
    left for after the others, which are then fetched and answered without waiting for it."""
    cfg = reads.runtime.config.search
    fusion = Fusion.from_config(cfg)
    out: list[SearchRows | Exception | None] = [None] * len(asks)
    sent: dict[int, _Sent] = {}
    with reads.deadline() as deadline:
        for i, ask in enumerate(asks):
            try:
                asked = _asked(cfg, **ask)
                ws = reads.open(workspace)
                with bind(i):
                    sent[i] = _send(reads, ws, asked)
            except Exception as exc:
                out[i] = exc
        soon = Deadline(deadline.left() / 2)
        ready: dict[int, _Ranked] = {}
        late: list[int] = []
        for i, one in sent.items():
            try:
                ready[i] = _rank(one, fusion, soon)
            except DeadlineExceeded:
                late.append(i)  # waited for again below, with the whole deadline
            except Exception as exc:
                out[i] = exc
        # The ready searches share one fetch; each late one is waited for and fetched alone.
        for group in ([[*ready]] if ready else []) + [[i] for i in late]:
            try:
                ranked = {i: ready.get(i) or _rank(sent[i], fusion, deadline) for i in group}
                with bind(group[0]):
                    records = _fetch(reads, list(ranked.values()), deadline)
            except Exception as exc:
                for i in group:
                    out[i] = exc
                continue
            for i, found in ranked.items():
                try:
                    out[i] = _rows(found, records, fusion)
                except Exception as exc:  # this search's alone
                    out[i] = exc
    answered = [r for r in out if r is not None]
    assert len(answered) == len(asks), out  # every ask ends with its rows or its error
    return answered


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
    limit: int | None = None,
    mode: Mode | None = None,
    max_chars: int | None = None,
    workspace: str = "",
) -> str:
    """What the MCP tool and `imprint search` both print; None = the `search` config."""
    rows = search_rows(reads, query, project, type, lang, layer, limit, mode, workspace)
    return format_search(rows, search_budget(reads, max_chars))
