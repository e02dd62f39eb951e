"""recall's model path with a fake provider: planning, answering, one deadline, fallbacks."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from imprint.actors.lifecycle import Runtime
from imprint.config import Config
from imprint.errors import ModelMissingError
from imprint.logs import configure_logging
from imprint.reads.gateway import ActorReads
from imprint.reads.search import SearchArgs, search_text
from imprint.recall.respond import RecallArgs, recall_text
from imprint.store.embedder import Embedder
from imprint.writes.files import ingest_path
from tests.conftest import TOPICS, write_tree
from tests.support.fakes import FakeProvider
from tests.support.recall_model import make_runtime
from tests.support.trace_support import LogWatch

PLAN = json.dumps(
    {
        "steps": [
            {"tool": "search", "args": {"query": "garden compost"}},
            {"tool": "kg_query", "args": {"subject": "garden"}},
            {"tool": "search", "args": {"query": "espresso and gardens"}},  # the baseline again
            {"tool": "search", "args": {"query": "garden compost"}},  # a repeat
        ]
    }
)
QUESTION = "espresso and gardens"


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


def run(
    tmp_path: Path, embedder: Embedder, provider: FakeProvider, **kw: Any
) -> tuple[str, Runtime]:
    rt = make_runtime(tmp_path, embedder, lambda: provider, **kw.pop("recall", {}))
    try:
        asked = {k: kw.pop(k) for k in ("plan", "max_chars", "condense") if k in kw}
        return recall_text(ActorReads(rt), RecallArgs(question=QUESTION, **asked), **kw), rt
    finally:
        rt.stop()


def test_model_plan_keeps_the_baseline_and_answers_with_citations(
    tmp_path: Path, embedder: Embedder
) -> None:
    """The model's valid steps join the baseline search; the answer cites shown evidence."""
    provider = FakeProvider(responses=[[PLAN], ["Ristretto uses less water [1]. ", "Compost [3]."]])
    text, _ = run(tmp_path, embedder, provider)
    lines = text.splitlines()
    assert lines[0].startswith(
        'recall "espresso and gardens" (local model planned 3 steps, 2 dropped)'
    )
    assert lines[1] == "step 1 search(query='espresso and gardens'): 5 results"  # the baseline
    assert lines[2].startswith("step 2 search(query='garden compost')")
    assert lines[3].startswith("step 3 kg_query(subject='garden')")
    assert "answer: Ristretto uses less water [1]. Compost [3]." in text
    cited = text.split("cited:\n", 1)[1].splitlines()
    assert cited[0].startswith("[1] ") and cited[1].startswith("[3] ")
    assert text.splitlines()[-1].startswith("not cited: ")
    plan_call, answer_call = provider.calls
    assert plan_call["schema"] is not None and answer_call["schema"] is None
    assert "Projects: proj" in plan_call["messages"][1]["content"]
    # The answer saw exactly the budgeted evidence a caller would get.
    assert answer_call["messages"][1]["content"].startswith(
        'recall "espresso and gardens": 3 steps'
    )


@pytest.mark.parametrize("budget", [1200, 4000])
def test_the_condensed_view_tells_the_caller_to_verify(
    tmp_path: Path, embedder: Embedder, budget: int
) -> None:
    """One line of the condensed view says the answer points to evidence and is not a fact."""
    provider = FakeProvider(responses=[[PLAN], ["Ristretto uses less water [1]."]])
    text, _ = run(tmp_path, embedder, provider, max_chars=budget)
    assert len(text) <= budget
    verify = [line for line in text.splitlines() if line.startswith("verify: ")]
    assert verify == [
        "verify: the answer is a pointer to the cited evidence, not a fact; read that evidence "
        "(get_memory, file_chunks, or condense=false) before relying on it"
    ]
    lines = text.splitlines()
    assert lines[lines.index(verify[0]) - 1] == "answer: Ristretto uses less water [1]."


def test_condense_false_returns_the_evidence_after_planning(
    tmp_path: Path, embedder: Embedder
) -> None:
    """condense=false: the model plans, and the evidence itself comes back, no answer."""
    provider = FakeProvider(responses=[[PLAN]])
    text, _ = run(tmp_path, embedder, provider, condense=False)
    assert text.startswith('recall "espresso and gardens": 3 steps')
    assert "answer:" not in text and len(provider.calls) == 1


def test_a_callers_plan_is_not_replanned(tmp_path: Path, embedder: Embedder) -> None:
    """With the caller's plan the model only answers."""
    provider = FakeProvider(tokens=["Tomatoes need full sun [1]."])
    plan = [{"tool": "search", "args": {"query": "tomatoes"}}]
    text, _ = run(tmp_path, embedder, provider, plan=plan)
    assert "answer: Tomatoes need full sun [1]." in text and len(provider.calls) == 1


@pytest.mark.parametrize(
    ("tokens", "note"),
    [
        (["{not json"], "note: unparseable plan"),
        (
            [
                json.dumps({"steps": [{"tool": "kg_query", "args": {"subject": ""}}]})[:0]
                + '{"steps": []}'
            ],
            "note: no valid step from the model",
        ),
        (
            [json.dumps({"steps": [{"tool": "search", "args": {"query": QUESTION}}]})],
            "note: no valid step from the model",
        ),
    ],
)
def test_a_useless_plan_falls_back_to_the_plain_search(
    tmp_path: Path, embedder: Embedder, tokens: list[str], note: str
) -> None:
    """Unparseable output or no valid step: the plain search of the question, with a note."""
    provider = FakeProvider(tokens=tokens)
    text, _ = run(tmp_path, embedder, provider)
    assert text.splitlines()[0] == note
    assert text.splitlines()[1].startswith(f'search "{QUESTION}" (hybrid): ')
    assert len(text) <= 4000 and len(provider.calls) == 1


def test_planning_timeout_falls_back_to_the_search(
    tmp_path: Path, embedder: Embedder, gate: threading.Event
) -> None:
    """A model that does not plan within the deadline: plain search, note, no answer asked."""
    provider = FakeProvider(prompt_gate=gate)
    text, _ = run(tmp_path, embedder, provider, recall={"llm_timeout_sec": 0.3})
    assert text.splitlines()[0] == "note: planning timed out"
    assert 'search "espresso and gardens"' in text.splitlines()[1]


def test_a_missing_model_falls_back_to_the_search(tmp_path: Path, embedder: Embedder) -> None:
    """No model file: the plain search with a note naming the setting."""

    def missing() -> Any:
        raise ModelMissingError("tagger.local.model_path: is empty; point it at a GGUF file")

    rt = make_runtime(tmp_path, embedder, missing)
    try:
        text = recall_text(ActorReads(rt), RecallArgs(question=QUESTION))
    finally:
        rt.stop()
    assert text.splitlines()[0].startswith("note: model error: tagger.local.model_path: is empty")


@pytest.mark.parametrize(
    ("answer", "note"),
    [
        (["The garden needs sun."], "note: answer cites no evidence; the evidence follows"),
        (["See [42]."], "note: answer cites evidence not shown: [42]; the evidence follows"),
    ],
)
def test_untraceable_answers_fall_back_to_the_evidence(
    tmp_path: Path, embedder: Embedder, answer: list[str], note: str
) -> None:
    """An answer without citations, or citing unshown evidence, is discarded."""
    provider = FakeProvider(responses=[[PLAN], answer])
    text, _ = run(tmp_path, embedder, provider)
    assert text.splitlines()[0] == note
    assert text.splitlines()[1].startswith('recall "espresso and gardens": 3 steps')
    assert len(text) <= 4000 and "answer:" not in text


def test_answer_timeout_falls_back_to_the_evidence(
    tmp_path: Path, embedder: Embedder, gate: threading.Event
) -> None:
    """Planning in time but answering too slowly returns the evidence with a note."""
    provider = FakeProvider(responses=[[PLAN], ["never seen [1]"]], call_gates=[None, gate])
    text, _ = run(tmp_path, embedder, provider, recall={"llm_timeout_sec": 3.0})
    assert text.splitlines()[0] == "note: answer timed out; the evidence follows"
    assert "step 2 search(query='garden compost')" in text


def test_one_deadline_covers_planning_and_answering(tmp_path: Path, embedder: Embedder) -> None:
    """Both model requests carry the same deadline, computed once per recall."""
    provider = FakeProvider(responses=[[PLAN], ["Yes [1]."]])
    run(tmp_path, embedder, provider, recall={"llm_timeout_sec": 25.0})
    plan_deadline, answer_deadline = (c["deadline"] for c in provider.calls)
    assert plan_deadline == answer_deadline


STEP_DONE = {"message": "recall.step", "outcome": "ok"}


@pytest.fixture
def steps_run(tmp_path: Path, log_watch: LogWatch) -> Iterator[tuple[LogWatch, threading.Event]]:
    """The actors' trace of the test, where each step that got its evidence is one
    `recall.step` event (its number in `step`), and an event set once step 1 (the baseline
    search) has its evidence."""
    configure_logging(tmp_path / "data", level="error")
    try:
        yield log_watch, log_watch.flag("actor.message", step=1, **STEP_DONE)
    finally:
        configure_logging(None, level="warning", to_file=False)


def steps_done(watch: LogWatch) -> list[int]:
    """The steps that got their evidence, in the order they got it."""
    return [e["step"] for e in watch.seen("actor.message", **STEP_DONE)]


def test_the_baseline_search_is_gathered_while_the_model_plans(
    tmp_path: Path, embedder: Embedder, steps_run: tuple[LogWatch, threading.Event]
) -> None:
    """Evidence first: the model cannot finish planning until the baseline search has its
    evidence; when the plan is then useless, that search is printed, not run again."""
    watch, searched = steps_run
    provider = FakeProvider(tokens=["{not json"], call_gates=[searched])
    rt = make_runtime(tmp_path, embedder, lambda: provider, llm_timeout_sec=30.0)
    try:
        reads = ActorReads(rt)
        text = recall_text(reads, RecallArgs(question=QUESTION))
        assert steps_done(watch) == [1]  # one search, gathered during planning
        note = "note: unparseable plan\n"
        assert text == note + search_text(
            reads, SearchArgs(query=QUESTION), max_chars=4000 - len(note)
        )
    finally:
        rt.stop()
    assert len(provider.calls) == 1


def test_only_the_steps_the_model_adds_run_after_planning(
    tmp_path: Path, embedder: Embedder, steps_run: tuple[LogWatch, threading.Event]
) -> None:
    """The baseline search runs during planning, once; the model's added steps after it,
    numbered after the baseline, and the answer sees all of them."""
    watch, searched = steps_run
    provider = FakeProvider(
        responses=[[PLAN], ["Ristretto uses less water [1]."]], call_gates=[searched]
    )
    text, _ = run(tmp_path, embedder, provider, recall={"llm_timeout_sec": 30.0})
    done = steps_done(watch)
    assert done[0] == 1 and sorted(done[1:]) == [2, 3]  # the baseline before the plan existed
    lines = text.splitlines()
    assert lines[1] == "step 1 search(query='espresso and gardens'): 5 results"
    assert lines[2].startswith("step 2 search(query='garden compost')")
    assert lines[3].startswith("step 3 kg_query(subject='garden')")
    assert "answer: Ristretto uses less water [1]." in text


class _Recorder(BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        _Recorder.hits.append(self.path)
        self.send_error(500)


@pytest.mark.parametrize(
    ("provider", "base_url"),
    [("openai", "http://127.0.0.1:{port}"), ("vllm", "http://192.168.77.1:{port}")],
)
def test_remote_and_lan_providers_are_never_called_and_noted(
    tmp_path: Path, embedder: Embedder, provider: str, base_url: str
) -> None:
    """recall.llm with a remote API (even one answering on loopback) or a LAN host: a note,
    the deterministic answer, and not one request to the provider."""
    _Recorder.hits = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        config = Config()
        config.recall.llm = True
        config.tagger.provider = provider  # type: ignore[assignment]
        config.tagger.model = "m"
        config.tagger.api_key = "k"
        config.tagger.base_url = base_url.format(port=httpd.server_address[1])
        rt = Runtime(tmp_path / "data", config, embedder=embedder).start()
        try:
            ingest_path(rt, write_tree(tmp_path / "p", TOPICS), project="proj")
            reads = ActorReads(rt)
            text = recall_text(reads, RecallArgs(question="espresso"))
            plain = search_text(reads, SearchArgs(query="espresso"))
        finally:
            rt.stop()
    finally:
        httpd.shutdown()
        httpd.server_close()
    first, rest = text.split("\n", 1)
    assert first == (
        f"note: recall.llm is on, but tagger.provider '{provider}' does not run on this "
        "computer; no model was asked"
    )
    assert rest.startswith('search "espresso" (hybrid):') and plain.startswith(rest[:40])
    assert _Recorder.hits == []
