"""recall's model path, guarded: only fillable tools offered, no prompt started that cannot
finish, answers cited by construction (grammar) and refused when they only restate headers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from imprint.actors.inference import CompleteRequest, Inference
from imprint.providers import ChatMessage
from imprint.reads.gateway import ActorReads
from imprint.reads.search import SearchArgs, search_text
from imprint.recall.model import answer_grammar, header_words, restates_headers
from imprint.recall.respond import RecallArgs, recall_text
from imprint.store.embedder import Embedder
from tests.support.fakes import FakeClock, FakeProvider
from tests.support.recall_model import make_runtime

INVENTED = json.dumps(
    {
        "steps": [
            {"tool": "get_memory", "args": {"id": "0123456789abcdef"}},  # invented id
            {"tool": "file_summary", "args": {"source": "docs/invented.md"}},  # invented path
            {"tool": "neighbors", "args": {"id": "fedcba9876543210"}},
            {"tool": "kg_query", "args": {"subject": "garden"}},
        ]
    }
)


def tools_offered(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each offered tool's argument properties, from the plan schema."""
    items = schema["properties"]["steps"]["items"]["anyOf"]
    return {i["properties"]["tool"]["const"]: i["properties"]["args"]["properties"] for i in items}


def test_the_planner_is_offered_only_search_facts_and_sources_without_names(
    tmp_path: Path, embedder: Embedder
) -> None:
    """No path or id in the question: no file or record reads offered, invented ones dropped."""
    provider = FakeProvider(responses=[[INVENTED], ["Turn the compost heap often [1]."]])
    rt = make_runtime(tmp_path, embedder, lambda: provider)
    try:
        text = recall_text(ActorReads(rt), RecallArgs(question="how do I keep a garden"))
    finally:
        rt.stop()
    offered = tools_offered(provider.calls[0]["schema"])
    assert set(offered) == {"search", "kg_query", "list_sources"}
    assert offered["search"]["project"] == {"type": "string", "enum": ["proj"]}
    assert "planned 2 steps, 3 dropped" in text.splitlines()[0]
    assert "step 2 kg_query(subject='garden')" in text
    assert "0123456789abcdef" not in text and "invented.md" not in text


def test_named_paths_and_ids_that_exist_are_offered_and_nothing_else(
    tmp_path: Path, embedder: Embedder
) -> None:
    """A question naming a real path and a real id gets file and record reads for exactly
    those; a named path that does not exist is not offered; invented ones are still dropped."""
    holder: dict[str, FakeProvider] = {}
    rt = make_runtime(tmp_path, embedder, lambda: holder["p"])
    try:
        reads = ActorReads(rt)
        rid = (
            search_text(reads, SearchArgs(query="purple kangaroo protocol"))
            .split("\n")[2]
            .split(" ")[1]
        )
        plan = {
            "steps": [
                {"tool": "file_summary", "args": {"source": "docs/espresso.md"}},
                {"tool": "neighbors", "args": {"id": rid}},
                {"tool": "file_chunks", "args": {"source": "docs/missing.md"}},
                {"tool": "get_memory", "args": {"id": "0123456789abcdef"}},
            ]
        }
        holder["p"] = FakeProvider(
            responses=[[json.dumps(plan)], ["A ristretto uses less water [1]."]]
        )
        question = f"what do docs/espresso.md and docs/missing.md say, and what is near {rid}?"
        text = recall_text(reads, RecallArgs(question=question))
    finally:
        rt.stop()
    offered = tools_offered(holder["p"].calls[0]["schema"])
    assert offered["file_summary"]["source"]["enum"] == ["docs/espresso.md"]
    assert offered["file_chunks"]["source"]["enum"] == ["docs/espresso.md"]
    assert offered["get_memory"]["id"]["enum"] == [rid]
    assert offered["neighbors"]["id"]["enum"] == [rid]
    user = holder["p"].calls[0]["messages"][1]["content"]
    assert f"Paths: docs/espresso.md\nIds: {rid}\n" in user
    assert "planned 3 steps, 2 dropped" in text.splitlines()[0]
    assert "file_summary(source='docs/espresso.md')" in text and f"neighbors(id='{rid}')" in text


def test_a_prompt_that_cannot_finish_before_the_deadline_is_not_started() -> None:
    """The measured prompt speed (per provider, as the run goes) prices the next prompt; one
    estimated past the deadline is skipped with the estimate, the provider never called."""
    clock = FakeClock()
    provider = FakeProvider(tokens=["ok"], clock=clock, seconds_per_token=0.1)
    logic = Inference(lambda: provider, clock=clock)
    words = " ".join(["word"] * 100)
    msgs = ({"role": "user", "content": words},)
    first = logic.complete(CompleteRequest(messages=msgs, deadline=clock() + 60))
    assert first.ok and first.prompt_tokens == 100 and first.estimate_ms is None
    assert first.first_piece_ms == pytest.approx(10_000)  # 100 tokens at 0.1 s each
    assert logic.speeds["fake"].tokens_per_s == pytest.approx(10.0)
    late = logic.complete(CompleteRequest(messages=msgs, deadline=clock() + 5))
    assert late.outcome == "skipped_cost" and late.estimate_ms == pytest.approx(10_000)
    assert late.detail == "about 10.0 s for 100 prompt tokens at 10 tokens/s, 5.0 s left"
    assert len(provider.calls) == 1
    short = ({"role": "user", "content": " ".join(["word"] * 20)},)
    fits = logic.complete(CompleteRequest(messages=short, deadline=clock() + 5))
    assert fits.ok and fits.estimate_ms == pytest.approx(2_000)
    assert fits.first_piece_ms == pytest.approx(2_000)  # the estimate beside what happened


def test_an_answer_estimated_past_the_deadline_is_skipped_and_the_evidence_returned(
    tmp_path: Path, embedder: Embedder
) -> None:
    """Planning measures the speed; an answer prompt that cannot finish is never started."""

    class Sized(FakeProvider):
        def count_tokens(self, messages: list[ChatMessage]) -> int:
            # The planning prompt is small; the answer prompt (the evidence) is enormous.
            return 10**9 if messages[-1]["content"].startswith("recall ") else 100

    provider = Sized(
        responses=[[json.dumps({"steps": [{"tool": "kg_query", "args": {"subject": "garden"}}]})]]
    )
    rt = make_runtime(tmp_path, embedder, lambda: provider)
    try:
        text = recall_text(ActorReads(rt), RecallArgs(question="espresso and gardens"))
    finally:
        rt.stop()
    first = text.splitlines()[0]
    assert first.startswith("note: answer skipped: about ") and "1000000000 prompt tokens" in first
    assert first.endswith("; the evidence follows")
    assert text.splitlines()[1].startswith('recall "espresso and gardens": 2 steps')
    assert len(provider.calls) == 1  # planned, never asked to answer


def test_the_answer_is_generated_under_a_grammar_of_shown_citations(
    tmp_path: Path, embedder: Embedder
) -> None:
    """The answer request carries a grammar whose citations are exactly 1..shown blocks."""
    provider = FakeProvider(tokens=["Tomatoes need six hours of sun [1]."])
    rt = make_runtime(tmp_path, embedder, lambda: provider)
    try:
        plan = [{"tool": "search", "args": {"query": "tomatoes", "limit": 3}}]
        text = recall_text(
            ActorReads(rt), RecallArgs(question="tomatoes", plan=plan, max_chars=1200)
        )
    finally:
        rt.stop()
    assert "answer: Tomatoes need six hours of sun [1]." in text
    grammar = provider.calls[0]["grammar"]
    assert grammar == answer_grammar(3)
    assert grammar.splitlines()[-1] == 'num ::= "3" | "2" | "1"'


def test_the_answer_grammar_is_valid_gbnf() -> None:
    """llama.cpp's own parser accepts the grammar (no model needed)."""
    from llama_cpp import LlamaGrammar

    assert LlamaGrammar.from_string(answer_grammar(12), verbose=False) is not None


def test_a_reply_that_only_restates_block_headers_is_refused(
    tmp_path: Path, embedder: Embedder
) -> None:
    """Citing shown blocks is not enough: a reply made of their headers is refused."""
    holder: dict[str, FakeProvider] = {}
    rt = make_runtime(tmp_path, embedder, lambda: holder["p"])
    try:
        reads = ActorReads(rt)
        plan = [{"tool": "search", "args": {"query": "tomatoes", "limit": 2}}]
        rid = search_text(reads, SearchArgs(query="tomatoes", limit=2)).split("\n")[2].split(" ")[1]
        reply = f"Source {rid} in project proj, docs/gardening.md#0, a note [1]."
        holder["p"] = FakeProvider(tokens=[reply])
        text = recall_text(reads, RecallArgs(question="tomatoes", plan=plan))
    finally:
        rt.stop()
    assert text.splitlines()[0] == (
        "note: answer only restates the evidence headers; the evidence follows"
    )
    assert "answer:" not in text


def test_restating_headers_is_told_from_saying_something() -> None:
    """The gate's rule on its own: header tokens and glue words do not count as content."""
    evidence = "recall\n\n[1] 0a1b2c3d4e5f6a7b | proj | docs/gardening.md#0 | note | 0.5000\ntext"
    headers = header_words(evidence, 1)
    assert restates_headers("See docs/gardening.md#0 in proj [1].", headers)
    assert restates_headers("0a1b2c3d4e5f6a7b | proj | note [1].", headers)
    assert not restates_headers("Tomatoes need six hours of sun [1].", headers)


def test_an_old_speed_measurement_does_not_keep_the_model_from_being_measured_again() -> None:
    """After SPEED_TTL_SEC a slow measurement no longer skips prompts: the next one runs
    and measures again, so a busy moment does not switch the model path off for good."""
    from imprint.actors.inference import SPEED_TTL_SEC

    clock = FakeClock()
    provider = FakeProvider(tokens=["ok"], clock=clock, seconds_per_token=1.0)
    logic = Inference(lambda: provider, clock=clock)
    msgs = ({"role": "user", "content": " ".join(["word"] * 80)},)
    assert logic.complete(CompleteRequest(messages=msgs, deadline=clock() + 100)).ok
    skipped = logic.complete(CompleteRequest(messages=msgs, deadline=clock() + 20))
    assert skipped.outcome == "skipped_cost"
    clock.advance(SPEED_TTL_SEC + 1)
    provider.seconds_per_token = 0.1  # the machine is quiet again
    again = logic.complete(CompleteRequest(messages=msgs, deadline=clock() + 20))
    assert again.ok and again.estimate_ms is None and again.first_piece_ms == pytest.approx(8000)
    then = logic.complete(CompleteRequest(messages=msgs, deadline=clock() + 20))
    assert then.ok and then.estimate_ms == pytest.approx(8000)  # the old sample is gone


def test_short_prompts_do_not_measure_the_speed() -> None:
    """Below MIN_SPEED_TOKENS a prompt's time is mostly fixed cost: it leaves the measured
    speed alone, so a run of tiny prompts cannot price real ones out."""
    from imprint.actors.inference import MIN_SPEED_TOKENS

    clock = FakeClock()
    provider = FakeProvider(tokens=["ok"], clock=clock, seconds_per_token=0.01)
    logic = Inference(lambda: provider, clock=clock)
    big = ({"role": "user", "content": " ".join(["word"] * 100)},)
    assert logic.complete(CompleteRequest(messages=big, deadline=clock() + 60)).ok
    provider.seconds_per_token = 1.0  # tiny prompts that look very slow per token
    tiny = ({"role": "user", "content": " ".join(["w"] * (MIN_SPEED_TOKENS - 1))},)
    for _ in range(5):
        logic.complete(CompleteRequest(messages=tiny, deadline=clock() + 600))
    assert logic.speeds["fake"].tokens_per_s == pytest.approx(100.0)


def test_restating_the_count_line_or_ids_is_refused_too() -> None:
    """Answers seen from the real model: the count line, or ids and a path, with citations."""
    evidence = (
        "recall \"q\": 1 steps, 2 records\nstep 1 search(query='q'): 2 results\n\n"
        "[1] 326a83ca39e20c56 | corpus | imprint-memory-layer/docs/tagging.md#0 | note | 0.5\n"
        "Tagging runs an LLM over each chunk.\n\n[2] imprint-memory-layer/docs/sync.md#1 0.4000"
        "\n\n(1 more result hidden by max_chars=4000; raise max_chars (up to 12000) or narrow "
        "the steps)"
    )
    headers = header_words(evidence, 1)
    assert restates_headers(
        "The answer is: 1 more result hidden by max_chars=4000; raise max_chars [1].", headers
    )
    assert restates_headers(
        "The answer is: 326a83ca39e20c56 | corpus | imprint-memory-layer/docs/tagging [1].",
        headers,
    )
    assert not restates_headers("Tagging runs an LLM over each chunk [1].", headers)


def test_an_answer_cut_at_max_tokens_keeps_its_complete_cited_sentences(
    tmp_path: Path, embedder: Embedder
) -> None:
    """A reply cut mid-sentence loses the unfinished sentence, not its cited ones."""
    provider = FakeProvider(tokens=["Tomatoes need six hours of sun [1]. ", "Mulch keeps the soi"])
    rt = make_runtime(tmp_path, embedder, lambda: provider)
    try:
        plan = [{"tool": "search", "args": {"query": "tomatoes", "limit": 2}}]
        text = recall_text(ActorReads(rt), RecallArgs(question="tomatoes", plan=plan))
    finally:
        rt.stop()
    assert "answer: Tomatoes need six hours of sun [1].\n" in text
