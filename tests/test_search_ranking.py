"""Hybrid ranking (issue 16): identifier-aware words, fusion weights from `search.*` settings,
the coverage re-rank, and the per-hit numbers ("why it ranked") the fusion itself used."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from imprint.actors.lifecycle import Runtime
from imprint.config import Config
from imprint.reads.gateway import ActorReads
from imprint.reads.ranking import Fusion, Why, coverage, fuse, names_symbol, rerank
from imprint.reads.search import SearchArgs, format_search, search
from imprint.store.embedder import Embedder
from imprint.store.records import Record
from imprint.store.text import content_terms, holds_term, identifier_parts, words
from imprint.types import MemoryId
from imprint.writes.files import ingest_path
from tests.conftest import write_tree

# Three files: one states the answer in other words, one names the identifier in snake_case,
# one repeats a query word many times without answering.
FILES = {
    "docs/lifecycle.md": (
        "# Lifecycle\n\n## Stopping\n\nOnce stopped, an actor can never be started again; "
        "create a new one instead.\n"
    ),
    "docs/hints.md": (
        "# Tool hints\n\nSet read_only_hint=True on a tool that changes nothing, so a client "
        "may run it without asking.\n"
    ),
    "docs/noise.md": (
        "# Noise\n\nactor actor actor actor actor: this page mentions actors a lot and says "
        "nothing about restarting them or about hints.\n"
    ),
}


def _runtime(tmp_path: Path, embedder: Embedder, **search: object) -> Runtime:
    config = Config()
    for key, value in search.items():
        setattr(config.search, key, value)
    return Runtime(tmp_path / f"data-{len(search)}", config, embedder=embedder).start()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "proj", FILES)


@pytest.fixture
def plain(tmp_path: Path, embedder: Embedder, tree: Path) -> Iterator[Runtime]:
    rt = _runtime(tmp_path, embedder)
    ingest_path(rt, tree, project="proj")
    try:
        yield rt
    finally:
        rt.stop()


# -- words ---------------------------------------------------------------------------------


def test_identifier_parts_split_snake_camel_and_acronyms() -> None:
    """snake_case, CamelCase, mixedCase and an acronym prefix split; a plain word stays whole."""
    assert identifier_parts("read_only_hint") == ["read", "only", "hint"]
    assert identifier_parts("ActorRef") == ["Actor", "Ref"]
    assert identifier_parts("readOnlyHint") == ["read", "Only", "Hint"]
    assert identifier_parts("HTTPServer") == ["HTTP", "Server"]
    assert identifier_parts("stop") == ["stop"]


def test_words_keep_each_identifier_and_add_its_parts() -> None:
    """A dotted call reduces to its identifiers, each followed by its parts, lower-cased."""
    assert words("ActorRef.stop()") == ["actorref", "actor", "ref", "stop"]
    assert words("cache_logger_on_first_use") == [
        "cache_logger_on_first_use",
        "cache",
        "logger",
        "on",
        "first",
        "use",
    ]


def test_the_same_identifier_written_three_ways_gives_the_same_terms() -> None:
    """`ActorRef.stop`, `actor_ref.stop()` and "stop on an actor ref" share actor, ref, stop."""
    core = {"actor", "ref", "stop"}
    for text in ("ActorRef.stop", "actor_ref.stop()", "stop on an actor ref"):
        assert core <= content_terms(text), text
    assert "an" not in content_terms("stop on an actor ref")
    assert content_terms("stopping actors") == {"stopp", "actor"}


# -- fusion --------------------------------------------------------------------------------


def _ids(*names: str) -> list[tuple[MemoryId, float]]:
    return [(MemoryId(n), 1.0) for n in names]


def test_fuse_weights_each_list_and_reports_its_ranks() -> None:
    """Weighted RRF: score = sum of weight / (k + rank); Why carries each list's rank."""
    fusion = Fusion(rrf_k=10, vector=2.0, lexical=1.0, phrase=0.5)
    fused = fuse(_ids("a", "b"), _ids("b", "c"), _ids("c"), fusion)
    scores = {rid: score for rid, score, _ in fused}
    assert scores["a"] == pytest.approx(2 / 11)
    assert scores["b"] == pytest.approx(2 / 12 + 1 / 11)
    assert scores["c"] == pytest.approx(1 / 12 + 0.5 / 11)
    assert [rid for rid, _, _ in fused] == ["b", "a", "c"]
    why = {rid: w for rid, _, w in fused}
    assert why["b"] == Why(vector_rank=2, lexical_rank=1, phrase=False, fused=scores["b"])
    assert why["c"].phrase and why["c"].vector_rank is None and why["c"].lexical_rank == 2


def test_fuse_with_a_zero_weight_ignores_that_list() -> None:
    """A list weighted 0 changes no score; its ranks are still reported."""
    fused = fuse(_ids("a", "b"), _ids("b", "a"), None, Fusion(vector=0.0))
    assert [rid for rid, _, _ in fused] == ["b", "a"]
    assert fused[0][2].vector_rank == 2


def test_fusion_weights_and_k_come_from_search_settings() -> None:
    """`search.rrf_k`, the three weights, the coverage and history weights and depth reach
    the fusion."""
    config = Config()
    config.search.rrf_k = 7
    config.search.vector_weight = 0.5
    config.search.lexical_weight = 2.0
    config.search.phrase_weight = 0.0
    config.search.coverage_weight = 3.0
    config.search.rerank_depth = 40
    config.search.history_weight = 0.25
    assert Fusion.from_config(config.search) == Fusion(
        rrf_k=7, vector=0.5, lexical=2.0, phrase=0.0, coverage=3.0, depth=40, history=0.25
    )


def test_bad_fusion_settings_are_refused_with_their_range() -> None:
    """A negative weight or a depth over 150 is refused naming the field."""
    config = Config()
    with pytest.raises(ValueError, match="vector_weight"):
        config.search.vector_weight = -1
    with pytest.raises(ValueError, match="rerank_depth"):
        config.search.rerank_depth = 500


def test_search_weights_from_config_change_the_hybrid_order(
    tmp_path: Path, embedder: Embedder, tree: Path
) -> None:
    """Weighting only BM25, hybrid ranks as lexical does; weighting only vectors, as semantic."""
    query = "restart an actor after stopping it"
    for only, mode in (("lexical_weight", "lexical"), ("vector_weight", "semantic")):
        weights = {"vector_weight": 0.0, "lexical_weight": 0.0, "phrase_weight": 0.0}
        weights[only] = 1.0
        rt = _runtime(tmp_path / only, embedder, coverage_weight=0.0, **weights)
        try:
            ingest_path(rt, tree, project="proj")
            reads = ActorReads(rt)
            single = [h.record.id for h in search(reads, SearchArgs(query=query, mode=mode)).hits]  # type: ignore[arg-type]
            hybrid = [h.record.id for h in search(reads, SearchArgs(query=query)).hits]
            assert hybrid[: len(single)] == single, only
        finally:
            rt.stop()


# -- why it ranked ---------------------------------------------------------------------------


def test_each_hybrid_hit_carries_the_numbers_the_fusion_used(plain: Runtime) -> None:
    """Per hit: ranks match the single-mode searches, and the score is the fused score."""
    reads = ActorReads(plain)
    query = "can an actor be started again once stopped"
    rows = search(reads, SearchArgs(query=query))
    fusion = Fusion.from_config(plain.config.search)
    semantic = [h.record.id for h in search(reads, SearchArgs(query=query, mode="semantic")).hits]
    lexical = [h.record.id for h in search(reads, SearchArgs(query=query, mode="lexical")).hits]
    assert rows.hits
    for hit in rows.hits:
        why = hit.why
        assert why is not None and why.fused == hit.score
        rid = hit.record.id
        assert why.vector_rank == (semantic.index(rid) + 1 if rid in semantic else None)
        assert why.lexical_rank == (lexical.index(rid) + 1 if rid in lexical else None)
        expected = sum(
            weight / (fusion.rrf_k + rank)
            for weight, rank in (
                (fusion.vector, why.vector_rank),
                (fusion.lexical, why.lexical_rank),
            )
            if rank is not None
        )
        assert why.coverage is not None
        expected += fusion.coverage * why.coverage / (fusion.rrf_k + 1)
        assert not why.phrase  # no page holds the question as a phrase
        assert hit.score == pytest.approx(expected, abs=1e-12)


def test_single_mode_hits_carry_their_own_rank(plain: Runtime) -> None:
    """Semantic hits report vector ranks 1..n, lexical hits BM25 ranks 1..n."""
    reads = ActorReads(plain)
    sem = search(reads, SearchArgs(query="actor", mode="semantic")).hits
    lex = search(reads, SearchArgs(query="actor", mode="lexical")).hits
    assert [h.why.vector_rank for h in sem if h.why] == list(range(1, len(sem) + 1))
    assert [h.why.lexical_rank for h in lex if h.why] == list(range(1, len(lex) + 1))


def test_the_tool_text_does_not_show_the_why_numbers(plain: Runtime) -> None:
    """The text output is the same blocks as before: no ranks or coverage in it."""
    text = format_search(search(ActorReads(plain), SearchArgs(query="actor stopped")), 4000)
    for word in ("vector_rank", "lexical_rank", "coverage", "why"):
        assert word not in text


# -- coverage re-rank -------------------------------------------------------------------------


def test_coverage_rerank_lifts_the_chunk_holding_every_query_term() -> None:
    """Fused second but holding all the terms beats fused first holding one; the bonus is
    `coverage` over (rrf_k + 1), and Why reports the share and the final score."""
    fusion = Fusion(rrf_k=60, coverage=1.0)
    records = {
        MemoryId("a"): Record(id=MemoryId("a"), content="actor actor actor", source="noise.md"),
        MemoryId("b"): Record(
            id=MemoryId("b"), content="A stopped actor is never started again.", source="x.md"
        ),
    }
    fused = fuse(_ids("a", "b"), _ids("a", "b"), None, fusion)
    assert [rid for rid, _, _ in fused] == ["a", "b"]
    out = rerank("restart a stopped actor", fused, records, fusion)
    assert [rid for rid, _, _ in out] == ["b", "a"]
    scores = {rid: score for rid, score, _ in fused}
    why = {rid: (score, w) for rid, score, w in out}
    # Terms: restart, stopp, actor; b holds stopp and actor (2/3), a holds actor (1/3).
    assert why["b"][1].coverage == pytest.approx(2 / 3)
    assert why["a"][1].coverage == pytest.approx(1 / 3)
    assert why["b"][0] == pytest.approx(scores["b"] + (2 / 3) / 61)
    assert why["b"][1].fused == why["b"][0]
    # Weight 0: the order stays the fusion's.
    same = rerank("restart a stopped actor", fused, records, Fusion(coverage=0.0))
    assert [rid for rid, _, _ in same] == ["a", "b"]


def test_a_query_that_spells_a_symbol_lifts_the_chunk_that_defines_it() -> None:
    """`float_safe_remainder` names `floatSafeRemainder` packed beside `cleanRegex`, so that
    chunk passes the one fused above it by `phrase` over (rrf_k + 1); a prose chunk, a short
    name or a query with other words beside the name gets nothing."""
    fusion = Fusion(rrf_k=60, coverage=0.0)
    packed = Record(
        id=MemoryId("b"), content="x", source="util.ts", symbol="cleanRegex, floatSafeRemainder"
    )
    records = {
        MemoryId("a"): Record(
            id=MemoryId("a"), content="x", source="checks.ts", symbol="multipleOf"
        ),
        MemoryId("b"): packed,
    }
    fused = fuse(_ids("a", "b"), None, None, fusion)
    out = rerank("float_safe_remainder", fused, records, fusion)
    assert [rid for rid, _, _ in out] == ["b", "a"]
    scores = {rid: score for rid, score, _ in fused}
    assert out[0][1] == pytest.approx(scores["b"] + fusion.phrase / 61)
    assert names_symbol(
        "textfromansi", Record(id=MemoryId("t"), content="x", symbol="Text.from_ansi")
    )
    assert names_symbol("fromansi", Record(id=MemoryId("t"), content="x", symbol="Text.from_ansi"))
    assert not names_symbol("fromansi", Record(id=MemoryId("t"), content="from ansi"))
    assert not names_symbol("send", Record(id=MemoryId("t"), content="x", symbol="Client.send"))
    kept = rerank("where is float_safe_remainder used", fused, records, fusion)
    assert [rid for rid, _, _ in kept] == ["a", "b"]


def test_a_source_path_word_counts_toward_coverage() -> None:
    """A query word found only in the source path still counts as covered."""
    record = Record(id=MemoryId("r"), content="Flash the card.", source="docs/raspberrypi.md")
    assert coverage(content_terms("raspberrypi card"), record) == 1.0


def test_identifier_written_camel_case_finds_the_snake_case_text(plain: Runtime) -> None:
    """Lexical `readOnlyHint` finds the page that writes read_only_hint."""
    hits = search(ActorReads(plain), SearchArgs(query="readOnlyHint", mode="lexical")).hits
    assert hits and hits[0].record.source == "docs/hints.md"


def test_holds_term_agrees_with_content_terms() -> None:
    """The fast per-term test gives the same answer as building every content term."""
    texts = [
        "Call ActorRef.stop() on a running actor; stopped actors are never restarted.",
        "Set read_only_hint=True; HTTPServer binds 127.0.0.1; the stops, stopping, stoppers.",
        *FILES.values(),
    ]
    candidates = {"actor", "ref", "stopp", "stop", "hint", "http", "server", "restart", "bind"}
    candidates |= {"only", "read", "xyz", "127", "lifecycle", "again"}
    for text in texts:
        held = content_terms(text)
        for term in candidates:
            assert holds_term(text, term) == (term in held), (term, text)
