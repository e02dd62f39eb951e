"""How hybrid search ranks: weighted reciprocal-rank fusion, then a re-rank by coverage.

The numbers each hit ranked by travel with it (`Why`), for dashboards and benchmarks.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from imprint.config import SearchConfig
from imprint.store.records import Record
from imprint.store.text import content_terms, holds_term
from imprint.types import MemoryId

__all__ = ["Fusion", "Ranking", "Why", "coverage", "fuse", "rerank"]

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
