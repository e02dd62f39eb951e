"""search rows: hybrid (vector + BM25, reciprocal-rank fusion), semantic or lexical retrieval.

A search's arguments are one model (`SearchArgs`, in `imprint.reads.search_args` and
handed on here with its checks), resolved against `search.*` once, at the edge
(`SearchArgs.resolve`); `search_rows` fetches the rows of a resolved search through the
reader pools and `format_search` lays them out in the budgeted evidence format. The MCP
tool, the CLI, the dashboard and recall steps all come here, so defaults, clamps, filters
and the compact layout live here only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict

from imprint._faults import fail
from imprint.actors.deadline import Deadline, Pending
from imprint.actors.read_messages import (
    FetchRecords,
    LexicalAndPhrase,
    LexicalQuery,
    SupersedeLinks,
    VectorQuery,
)
from imprint.config import SearchConfig
from imprint.errors import DeadlineExceeded, InputError
from imprint.logs import get_logger
from imprint.reads.gateway import Reads
from imprint.reads.layout import (
    Block,
    day,
    meta_line,
    one_line,
    render_blocks,
    superseded_note,
)
from imprint.reads.ranking import Fusion, Ranking, Why, by_source, fuse, rerank
from imprint.reads.search_args import (
    HINT,
    MAX_CHARS_RANGE,
    MODES,
    SINCE_POOL,
    Mode,
    Search,
    SearchArgs,
    checked_mode,
    normalize_max_chars,
    parse_since,
)
from imprint.store.applying import Applying
from imprint.store.records import Record
from imprint.types import MemoryId, WorkspaceName

__all__ = [
    "HINT",
    "MAX_CHARS_RANGE",
    "MODES",
    "Mode",
    "Search",
    "SearchArgs",
    "SearchHit",
    "SearchRows",
    "checked_mode",
    "day",
    "format_search",
    "history_below",
    "meta_line",
    "normalize_max_chars",
    "parse_since",
    "planned_vector_query",
    "search",
    "search_budget",
    "search_many",
    "search_rows",
    "search_text",
]

log = get_logger(__name__)


class SearchHit(BaseModel):
    model_config = ConfigDict(frozen=True)

    record: Record
    score: float
    why: Why | None = None  # for dashboards and benchmarks; the tool's text never shows it
    superseded_by: MemoryId | None = None  # shown only when the search asked for superseded
    # The chunk numbers of this source's other matching chunks, best first (one hit per
    # source); shown in the header as `source#3 +#7,#1`.
    also: tuple[int, ...] = ()


class SearchRows(BaseModel):
    model_config = ConfigDict(frozen=True)

    query: str
    mode: Mode
    hits: tuple[SearchHit, ...]
    warning: str = ""  # one line: a failed index was left out of these results
    superseded: int = 0  # superseded memories among the best results, left out


def planned_vector_query(workspace: WorkspaceName, asked: Search) -> VectorQuery | None:
    """The vector read `search_rows` sends for this search; None when it sends none (lexical
    mode). A recall primes these before its steps run."""
    if asked.mode not in ("hybrid", "semantic"):
        return None
    return _vector_query(workspace, asked)


def search_budget(cfg: SearchConfig, max_chars: int | None) -> int:
    """The caller's budget, else `search.max_chars`; clamped to 1200-12000 either way: the
    one clamp of a search's (or a recall's) budget, at the edge."""
    return normalize_max_chars(cfg.max_chars if max_chars is None else max_chars)


def candidates(asked: Search) -> int:
    """How many hits each list of a search asks for: beyond `limit` in hybrid mode, so the
    fusion has something to agree on (3x, at least 30), and twice `limit` in a single mode
    with one hit per source, so that `limit` sources remain once a source's chunks are folded
    (3x cost 11-17% of p50 at 10k chunks and changed no rank on the retrieval sets); more with
    `since`, which drops older ones."""
    if asked.since:
        return max(SINCE_POOL, asked.limit)
    if asked.mode == "hybrid":
        return min(max(asked.limit * 3, 30), 150)
    return asked.limit if asked.by_chunk else min(asked.limit * 2, 150)


def _kept(asked: Search, fusion: Fusion) -> int:
    """How many fused candidates a search reads the records of: its limit, the re-rank's
    depth, three per hit when chunks fold into their source, `SINCE_POOL` with `since`."""
    keep = asked.limit if asked.by_chunk else min(asked.limit * 3, 150)
    if _reranks(asked.mode, fusion):
        keep = max(keep, fusion.depth)
    return max(keep, SINCE_POOL) if asked.since else keep


def _vector_query(workspace: WorkspaceName, asked: Search) -> VectorQuery:
    """The vector read of a search (one recall primes these for all its search steps)."""
    return VectorQuery(
        workspace=workspace,
        text=asked.text,
        limit=candidates(asked),
        filters=asked.filters,
    )


class _Sent(NamedTuple):
    """One search's reads, asked and not yet waited for."""

    asked: Search
    workspace: WorkspaceName
    vector: Pending[Ranking] | None
    lexical: Pending[Ranking] | None
    both: Pending[tuple[Ranking, Ranking]] | None  # the BM25 ranking and its phrase block
    applying: Applying  # what the writers are applying now (`store.applying`)
    applied: int  # writes applied to the workspace before these reads were asked


class _Ranked(NamedTuple):
    """One search's candidates, fused, before their records are read."""

    sent: _Sent
    ranked: list[tuple[MemoryId, float, Why]]
    warning: str


def _reranks(mode: Mode, fusion: Fusion) -> bool:
    """Whether a search's candidates are re-ranked by coverage and the history prior (and so
    fetched beyond its limit, `fusion.depth` of them)."""
    return mode == "hybrid" and (fusion.coverage > 0 or fusion.history > 0)


def _send(reads: Reads, workspace: WorkspaceName, asked: Search) -> _Sent:
    mode, text, filters = asked.mode, asked.text, asked.filters
    pool = candidates(asked)
    applied = reads.applying.applied_count(workspace)
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
    return _Sent(asked, workspace, vector, lexical, both, reads.applying, applied)


def _rank(sent: _Sent, fusion: Fusion, deadline: Deadline) -> _Ranked:
    """Wait for a search's reads (within `deadline`) and fuse them."""
    mode = sent.asked.mode
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
    keep = _kept(sent.asked, fusion)
    if mode == "hybrid":
        ranked = fuse(got_vector, got_lexical, got_phrase, fusion, keep)
    else:
        only = (got_vector if mode == "semantic" else got_lexical) or []
        ranked = [
            (
                rid,
                score,
                Why.model_construct(
                    vector_rank=rank if mode == "semantic" else None,
                    lexical_rank=rank if mode == "lexical" else None,
                    phrase=False,
                    coverage=None,
                    fused=score,
                ),
            )
            for rank, (rid, score) in enumerate(only, start=1)
        ]
    # The re-rank reads the text of its candidates: fetch them all, keep `limit` after.
    return _Ranked(sent, ranked[:keep], warning)


class _Found(NamedTuple):
    """The records of some searches' candidates, and which of them are superseded (by what)."""

    records: dict[MemoryId, Record]
    superseded: dict[MemoryId, MemoryId]


def _fetch(reads: Reads, ranked: Sequence[_Ranked], deadline: Deadline) -> _Found:
    """The records of these searches' candidates and their supersede links, asked together."""
    ids = tuple(dict.fromkeys(rid for one in ranked for rid, _, _ in one.ranked))
    workspace = ranked[0].sent.workspace
    records = reads.ask(FetchRecords(workspace=workspace, ids=ids))
    links = reads.ask(SupersedeLinks(workspace=workspace, ids=ids))
    found = deadline.wait(records, "search (fetch)")
    return _Found(found, {k.old: k.new for k in deadline.wait(links, "search (fetch)")})


def _orphans(missing: list[MemoryId], sent: _Sent) -> int:
    """How many of the candidates without a record count as damage: none when a write
    was applied to the workspace since the search's reads were asked, else those no
    write is applying now."""
    if not missing or sent.applying.applied_count(sent.workspace) != sent.applied:
        return 0
    return len(missing) - len(sent.applying.being_applied(sent.workspace, missing))


def history_below(
    ranked: list[tuple[MemoryId, float, Why]],
    records: dict[MemoryId, Record],
    superseded: dict[MemoryId, MemoryId],
) -> list[tuple[MemoryId, float, Why]]:
    """A captured session's turns and summary rank below what replaced an item that session
    stated (its observation, superseded, names the session as `session:<id>#n`): still
    found, as history, but after the answer that holds now. A store without captured
    observations is left as it is."""
    stated: dict[str, set[MemoryId]] = {}
    for old, new in superseded.items():
        record = records.get(old)
        if record is not None and record.source.startswith("session:") and "#" in record.source:
            stated.setdefault(record.source.split("#", 1)[0], set()).add(new)
    if not stated:
        return ranked
    out = list(ranked)
    for candidate in ranked:
        source = records[candidate[0]].source if candidate[0] in records else ""
        if source not in stated:
            continue
        ids = [c[0] for c in out]
        newer = [ids.index(n) for n in stated[source] if n in ids]
        here = ids.index(candidate[0])
        if newer and here < min(newer):
            out.insert(min(newer), out.pop(here))  # just after the first that replaced it
    return out


def _rows(one: _Ranked, found: _Found, fusion: Fusion) -> SearchRows:
    fail("search.rows")  # a search that crashes beside others (tests/test_recall.py)
    asked, records = one.sent.asked, found.records
    mode, text, limit = asked.mode, asked.text, asked.limit
    ranked, warning = one.ranked, one.warning
    if asked.since:
        ranked = [
            c for c in ranked if c[0] not in records or records[c[0]].created_at >= asked.since
        ]
    # Vectors among the first `limit` whose records are gone (a damaged lexical side), not
    # those of a write being applied or one applied while this search ran.
    orphans = _orphans([rid for rid, _, _ in ranked[:limit] if rid not in records], one.sent)
    if _reranks(mode, fusion):
        ranked = rerank(text, ranked, records, fusion)
    ranked = [c for c in ranked if c[0] in records]
    # What would be shown with the superseded ones counts them; the rest move up.
    hidden = 0
    if not asked.include_superseded:
        hidden = sum(1 for rid, _, _ in ranked[:limit] if rid in found.superseded)
        ranked = [c for c in ranked if c[0] not in found.superseded]
        ranked = history_below(ranked, records, found.superseded)
    shown: list[tuple[MemoryId, float, Why, tuple[int, ...]]]
    if asked.by_chunk:
        shown = [(rid, score, why, ()) for rid, score, why in ranked[:limit]]
    else:
        shown = by_source(ranked, records, limit)
    hits = tuple(
        SearchHit(
            record=records[rid],
            score=score,
            why=why,
            superseded_by=found.superseded.get(rid),
            also=also,
        )
        for rid, score, why, also in shown
    )
    if orphans and not warning:
        # Vectors whose records are gone (a damaged lexical side): shown, not silently lost.
        warning = (
            f"warning: {orphans} results had no record (the indexes disagree); "
            "run `imprint status --check`, then `imprint repair`"
        )
        log.warning("search.orphan_vectors", workspace=one.sent.workspace, count=orphans)
    return SearchRows(query=text, mode=mode, hits=hits, warning=warning, superseded=hidden)


def search_rows(reads: Reads, workspace: WorkspaceName, asked: Search) -> SearchRows:
    """Rows for a resolved search: records with their scores, best first, at most its limit.

    The fusion comes from `search.*` (`Fusion.from_config`). Each hit carries `why`: the
    numbers its ranking used.
    """
    fusion = Fusion.from_config(reads.runtime.config.search)
    with reads.deadline() as deadline:
        ranked = _rank(_send(reads, workspace, asked), fusion, deadline)
        found = _fetch(reads, [ranked], deadline)
    return _rows(ranked, found, fusion)


def search(reads: Reads, args: SearchArgs, workspace: str = "") -> SearchRows:
    """A search from the edge: resolved against `search.*`, its workspace opened, once each."""
    asked = args.resolve(reads.runtime.config.search)
    return search_rows(reads, reads.open(workspace), asked)


def search_many(
    reads: Reads,
    workspace: WorkspaceName,
    asks: Sequence[Search],
    bind: Callable[[int], AbstractContextManager[object]] = lambda i: nullcontext(),
) -> list[SearchRows | Exception]:
    """`search_rows(reads, workspace, ask)` for each ask, answered together (a recall's
    search steps): every read is asked at once and the candidates' records are
    read in ONE fetch, not one per search. Each result is exactly that search's rows, or
    the exception it raised, in order; `bind(i)` is entered while ask i sends its reads.

    A search whose reads have not answered within half of what is left of the deadline is
    left for after the others, which are then fetched and answered without waiting for it."""
    fusion = Fusion.from_config(reads.runtime.config.search)
    out: list[SearchRows | Exception | None] = [None] * len(asks)
    sent: dict[int, _Sent] = {}
    with reads.deadline() as deadline:
        for i, asked in enumerate(asks):
            try:
                with bind(i):
                    sent[i] = _send(reads, workspace, asked)
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
                    found = _fetch(reads, list(ranked.values()), deadline)
            except Exception as exc:
                for i in group:
                    out[i] = exc
                continue
            for i, one_ranked in ranked.items():
                try:
                    out[i] = _rows(one_ranked, found, fusion)
                except Exception as exc:  # this search's alone
                    out[i] = exc
    answered = [r for r in out if r is not None]
    assert len(answered) == len(asks), out  # every ask ends with its rows or its error
    return answered


def format_search(rows: SearchRows, max_chars: int = 4000) -> str:
    """The compact layout within `max_chars`, clamped by the caller (`search_budget`); recall
    fits a note line in front within that budget."""
    shown_query = one_line(rows.query)
    if len(shown_query) > 200:
        shown_query = shown_query[:199] + "…"
    warning = [rows.warning] if rows.warning else []
    if not rows.hits:
        note = superseded_note(rows.superseded)
        lines = [*warning, f'search "{shown_query}" ({rows.mode}): no results']
        return "\n".join(lines + ([f"({note})"] if note else []))
    prelude = [*warning, f'search "{shown_query}" ({rows.mode}): {len(rows.hits)} results']
    blocks = [
        Block(
            meta=meta_line(h.record, h.score, h.superseded_by, h.also), content=h.record.shown_text
        )
        for h in rows.hits
    ]
    return render_blocks(prelude, blocks, max_chars, hint=HINT, superseded=rows.superseded)


def search_text(
    reads: Reads, args: SearchArgs, max_chars: int | None = None, workspace: str = ""
) -> str:
    """What `imprint search` prints, as the MCP tool does; None = the `search` config."""
    rows = search(reads, args, workspace)
    return format_search(rows, search_budget(reads.runtime.config.search, max_chars))
