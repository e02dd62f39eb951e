"""How hybrid search ranks: weighted reciprocal-rank fusion, then a re-rank by coverage and
a prior on history pages and licences; and how a ranking becomes one hit per source.

History pages (changelogs, release notes, migration guides, what's-new pages) answer "when
did X change" and name almost everything once, so they crowd "how does X work" answers out;
licence texts answer only questions about the licence. A chunk counts as history from its
file's structure, never its name: the heading trail it sits under (`Record.context`) or its
own headings name a version or a date (`v3.0.0 (2019-12-22)`, `## 1.2.0`, `Migration: v1 to
v2`); as a licence from its form, legal clauses without headings. A query counts as a history
question from its form (`when did`, `which version`, `since v2`, `removed`, `deprecated`, a
version number), as a licence question when it names a licence or copyright. For any other
question such a chunk's score is lowered by `history` times a first rank in one list.

The numbers each hit ranked by travel with it (`Why`), for dashboards and benchmarks.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from imprint.config import SearchConfig
from imprint.store.records import Record
from imprint.store.text import content_terms, holds_term
from imprint.types import MemoryId

__all__ = [
    "CODE_NEAR",
    "SOURCE_NEAR",
    "Fusion",
    "Ranking",
    "Why",
    "by_source",
    "coverage",
    "fuse",
    "history_chunk",
    "history_question",
    "licence_chunk",
    "names_symbol",
    "rerank",
]

Ranking = list[tuple[MemoryId, float]]

# A version (`v3.0.0`, `v2`, `1.2.3`) or an ISO date, in a heading or a heading trail; a
# bare `2.0` is not one (`OAuth 2.1` is a topic, not a release).
_VERSION = r"(?:\bv\d+(?:\.\d+)*\b|\b\d+\.\d+\.\d+\b|\b\d{4}-\d{2}-\d{2}\b)"
_VERSIONED = re.compile(_VERSION)
_VERSION_HEADING = re.compile(r"^ {0,3}#{1,6}\s.*" + _VERSION, re.M)
# The form of a question about when something changed ("when" and "since" only where they
# ask, not where they join two clauses).
_HISTORY_QUESTION = re.compile(
    r"^\s*when\b|\bwhen (?:did|was|were|has|had|will)\b|\bsince (?:which|what|when|v?\d)|"
    r"\b(?:which|what|in which) (?:version|release)|\b(?:removed|deprecated|dropped|renamed|"
    r"introduced|added in|changelog|release notes|what'?s new|upgrad\w*|migrat\w*)\b|"
    r"\bv?\d+\.\d+\b|\bv\d+\b",
    re.I,
)
_LEGAL = re.compile(
    r"\b(?:copyright|warrant(?:y|ies)|liabilit(?:y|ies)|permission is hereby granted|"
    r"licen[cs]ed under|redistribution|merchantability|infringement)\b",
    re.I,
)
_LICENCE_QUESTION = re.compile(r"\b(?:licen[cs]\w*|copyright|warranty|spdx)\b", re.I)


class Why(BaseModel):
    """Why a hit ranked where it did: the numbers the ranking itself used, not a recomputation.

    Ranks are 1-based within each list the search ran (None: not in that list).
    """

    model_config = ConfigDict(frozen=True)

    vector_rank: int | None = None
    lexical_rank: int | None = None
    phrase: bool = False  # the record holds the query's words as one exact phrase
    coverage: float | None = None  # share of the query's terms the chunk holds (hybrid re-rank)
    history: bool = False  # a history or licence chunk lowered for a question not about it
    fused: float  # the final score, the same as the hit's score


class Fusion(BaseModel):
    """How hybrid search combines its lists; `search.*` settings, see `SearchConfig`."""

    model_config = ConfigDict(frozen=True)

    rrf_k: int = 5
    vector: float = 1.5
    lexical: float = 1.0
    phrase: float = 1.0
    coverage: float = 0.5
    depth: int = 20
    history: float = 1.0

    @classmethod
    def from_config(cls, cfg: SearchConfig) -> Fusion:
        return cls(
            rrf_k=cfg.rrf_k,
            vector=cfg.vector_weight,
            lexical=cfg.lexical_weight,
            phrase=cfg.phrase_weight,
            coverage=cfg.coverage_weight,
            depth=cfg.rerank_depth,
            history=cfg.history_weight,
        )


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


def history_chunk(record: Record) -> bool:
    """Whether a chunk sits in a history page, by its file's structure: a version or date in
    the heading trail above it, or two version headings in its own text."""
    trail = record.context.partition(" | ")[2]
    if trail and _VERSIONED.search(trail):
        return True
    if "#" not in record.content:
        return False
    return len(_VERSION_HEADING.findall(record.content, 0, 4000)) >= 2


def licence_chunk(record: Record) -> bool:
    """Whether a chunk is licence text: legal clauses of three kinds or more, no headings."""
    if record.context.partition(" | ")[2]:
        return False
    head = record.content[:4000].lower()
    if "copyright" not in head and "warrant" not in head and "licen" not in head:
        return False  # the common case, without the regex
    return len({m.group().lower()[:8] for m in _LEGAL.finditer(head)}) >= 3


def history_question(text: str) -> bool:
    """Whether a query asks when something changed (its form, not its topic)."""
    return _HISTORY_QUESTION.search(text) is not None


def coverage(terms: frozenset[str], record: Record) -> float:
    """The share of a query's content terms that a chunk's text or source path holds."""
    if not terms:
        return 0.0
    text = f"{record.content}\n{record.source}"
    lowered = text.lower()
    return sum(holds_term(text, term, lowered) for term in terms) / len(terms)


_WORD = re.compile(r"[A-Za-z0-9]+")


def _squashed(text: str) -> str:
    """Letters and digits only, lower case: `float_safe_remainder` -> `floatsaferemainder`."""
    return "".join(_WORD.findall(text)).lower()


def names_symbol(query: str, record: Record) -> bool:
    """Whether a query (squashed: `_squashed`) spells one of a code chunk's symbols, whole or
    its last part, in any case and with any separators: `float_safe_remainder` names
    `floatSafeRemainder`, `text from ansi` names `Text.from_ansi`. Six characters at least:
    `get` or `send` alone names too many."""
    if not record.symbol or len(query) < 6:
        return False
    for symbol in record.symbol.split(","):
        if query in (_squashed(symbol), _squashed(symbol.rsplit(".", 1)[-1])):
            return True
    return False


def rerank(
    text: str,
    fused: list[tuple[MemoryId, float, Why]],
    records: dict[MemoryId, Record],
    fusion: Fusion,
) -> list[tuple[MemoryId, float, Why]]:
    """Add coverage of the query's terms, worth `coverage` times a first rank in one list,
    and `phrase` times that when the query spells the chunk's symbol (`names_symbol`); lower
    history chunks by `history` times that for a question not about history. Only the
    first `depth` candidates are read so; the rest keep their fused score (they fill the
    sources after the first ones) and all are ordered by score."""
    terms = content_terms(text)
    squashed = _squashed(text)
    history_prior = 0.0 if history_question(text) else fusion.history
    licence_prior = 0.0 if _LICENCE_QUESTION.search(text) else fusion.history
    out = [(rid, score, why) for rid, score, why in fused[fusion.depth :] if rid in records]
    for rid, score, why in fused[: fusion.depth]:
        record = records.get(rid)
        if record is None:
            continue
        share = coverage(terms, record)
        prior = 0.0
        if history_prior and history_chunk(record):
            prior = history_prior
        elif licence_prior and licence_chunk(record):
            prior = licence_prior
        history = prior > 0
        # Code search (`benchmark.code_search`, tree arm): identifier top-1 10 -> 12 of 12
        # on the tuned set, 3 -> 4 of 4 held out (a symbol packed with small neighbours);
        # the other styles unchanged. Prose chunks have no symbol: unchanged.
        named = fusion.phrase if names_symbol(squashed, record) else 0.0
        final = score + (fusion.coverage * share + named - prior) / (fusion.rrf_k + 1)
        update = {"coverage": share, "history": history, "fused": final}
        out.append((rid, final, why.model_copy(update=update)))
    return sorted(out, key=lambda item: (-item[1], item[0]))


# Candidates this near the top keep a block of their own, even beside one of their source;
# a code chunk (one with a symbol: a function, a method) this near. Code search, tree-sitter
# chunks (`benchmark.code_search`, load 1-2): the definition visible at 4,000 characters in
# behaviour lookups 5 -> 7 of 12, task 8 -> 9 of 13, identifier 12 of 12 either way; 5 for
# every chunk instead cost prose (held-out hybrid R@5 84 -> 83); prose has no symbols, so
# its 169 lookups rank identically with this.
SOURCE_NEAR = 3
CODE_NEAR = 5


def by_source(
    ranked: Sequence[tuple[MemoryId, float, Why]],
    records: dict[MemoryId, Record],
    limit: int,
    named: int = 8,
    near: int = SOURCE_NEAR,
    near_code: int = CODE_NEAR,
) -> list[tuple[MemoryId, float, Why, tuple[int, ...]]]:
    """One entry per source at its best-ranked chunk, at most `limit`, each with the chunk
    numbers of that source's other candidates in rank order (at most `named`). A record
    without a source (an inline memory) is a source of its own. A chunk among the first
    `near` candidates keeps an entry of its own even when its source already has one: when
    one file holds the best few chunks (a long function, a class and its method), the
    second is shown, not only named (code search: the definition visible at 4,000
    characters in 25 of 37 lookups with it, 19 without; prose retrieval unchanged). A code
    chunk (it has a symbol) keeps its own entry among the first `near_code`: a file's
    functions are separate answers, where a document's sections continue each other."""
    out: list[tuple[MemoryId, float, Why, list[int]]] = []
    first: dict[tuple[str, str, bool], int] = {}
    for rank, (rid, score, why) in enumerate(ranked):
        record = records[rid]
        # A memory with a source (a session's summary) is no chunk of it: never folded in.
        key = (record.project, record.source, record.source_type == "memory")
        own = near_code if record.symbol else near
        if record.source and key in first and rank >= own:
            also = out[first[key]][3]
            if len(also) < named:
                also.append(record.chunk_index)
            continue
        if len(out) == limit:
            continue  # later chunks may still belong to a source already shown
        if record.source and key not in first:
            first[key] = len(out)
        out.append((rid, score, why, []))
    return [(rid, score, why, tuple(also)) for rid, score, why, also in out]
