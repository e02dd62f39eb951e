"""16 recalls fired at once behind a busy model (fake provider): bounded in count and time."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from rich.console import Console

from imprint.actors.inference import CompleteRequest, ask_model
from imprint.actors.lifecycle import Runtime
from imprint.config import Config
from imprint.logs import configure_logging, log_path
from imprint.reads.gateway import ActorReads
from imprint.recall.respond import RecallArgs, recall_text
from imprint.store.embedder import Embedder
from imprint.trace import MODEL_PHASES, load_recalls, render_trace
from imprint.writes.files import ingest_path
from tests.conftest import TOPICS, write_tree
from tests.support.fakes import FakeProvider

pytestmark = pytest.mark.timeout(300)

RECALLS = 16
DEADLINE = 2.0
MARGIN = 5.0  # generous: a shared 2-core machine; the point is "by its deadline", not speed


def test_sixteen_recalls_behind_a_busy_model(tmp_path: Path, embedder: Embedder) -> None:
    """Each recall returns by its deadline with the deterministic evidence, gathered while the
    model planned; none starts model work late; the busy prompt still finishes; the trace
    shows every recall's step during planning and the planning wait that hit the deadline."""
    data = tmp_path / "data"
    configure_logging(data, level="error")
    busy = threading.Event()
    provider = FakeProvider(tokens=[json.dumps({"steps": []})], call_gates=[busy])
    config = Config()
    config.recall.llm = True
    config.recall.llm_timeout_sec = DEADLINE
    config.tagger.provider = "local"
    rt = Runtime(data, config, embedder=embedder, provider_factory=lambda: provider).start()
    try:
        ingest_path(rt, write_tree(tmp_path / "p", TOPICS), project="proj")
        # The model is busy: a long request holds it (a tagging job, say).
        blocker = rt.inference().complete(
            CompleteRequest(
                messages=({"role": "user", "content": "busy"},),
                deadline=time.monotonic() + 120,
                purpose="tag",
            )
        )
        assert provider.prompt_started.wait(timeout=30)

        results: dict[int, tuple[str, float]] = {}
        start = threading.Barrier(RECALLS, timeout=60)

        def one(i: int) -> None:
            start.wait()
            t0 = time.monotonic()
            text = recall_text(
                ActorReads(rt), RecallArgs(question=f"espresso question {i}", plan=None)
            )
            results[i] = (text, time.monotonic() - t0)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(RECALLS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert len(results) == RECALLS
        for text, took in results.values():
            assert took <= DEADLINE + MARGIN, took
            assert text.startswith('note: planning timed out\nsearch "espresso question')
            assert "docs/espresso.md#0" in text  # the deterministic evidence came back

        busy.set()  # the busy prompt finishes in the background...
        assert blocker.get(timeout=60).outcome == "ok"
        assert provider.prompt_finished.is_set()
        # ...and no queued recall starts model work after its deadline.
        follow = ask_model(
            rt.inference(),
            CompleteRequest(
                messages=({"role": "user", "content": "after"},), deadline=time.monotonic() + 30
            ),
        )
        assert follow.outcome == "ok"
        for call in provider.calls:
            assert call["started"] < call["deadline"], call
        assert len(provider.calls) == 2  # the blocker and the follow-up; 16 skipped late
    finally:
        rt.stop()

    logged = log_path(data).read_text().splitlines()
    recalls = load_recalls([log_path(data)])
    assert len(recalls) == RECALLS
    model_waits = [
        e for events in recalls.values() for e in events if e.get("message") == "inference.complete"
    ]
    assert len(model_waits) == RECALLS
    done = [json.loads(line) for line in logged if '"inference.done"' in line]
    (busy_done,) = (n for n, e in enumerate(done) if e["purpose"] == "tag")
    taken = {e["recall_id"] for e in done[busy_done + 1 :] if e.get("recall_id")}
    for event in model_waits:
        # Each waited in the mailbox behind the busy prompt, past its deadline, and was not
        # run: the log says so.
        assert event["outcome"] == "skipped_late" and event["recall_id"] in taken
    assert sum(1 for e in done if e["outcome"] == "skipped_late") == RECALLS
    for rid, events in recalls.items():
        # Evidence first: the baseline search (step 1, the recall's only step) was gathered
        # while the model planned, and finished before the planning wait hit the deadline;
        # the fallback printed it rather than searching again after the deadline.
        order = [
            (e.get("message") or e["event"], e["outcome"])  # model phases log theirs too
            for e in events
            if e.get("message") in ("recall.step", "recall.gather") or e["event"] in MODEL_PHASES
        ]
        assert order == [
            ("recall.step", "ok"),
            ("recall.gather", "ok"),
            ("recall.model.plan", "timeout"),
        ], (rid, order)
        (step,) = (e for e in events if e.get("message") == "recall.step")
        assert step["step"] == 1
    console = Console(width=200, record=True)
    assert render_trace(log_path(data), console=console) == 0
    out = console.export_text()
    assert out.count("hit the deadline") == RECALLS and "during planning" in out
    assert out.count("model (recall.plan)") == RECALLS  # the planning request's own row


def test_trace_renders_steps_with_queue_and_run_times(
    tmp_path: Path, embedder: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    """imprint trace: a table per recall with each step, reader reads, and the slowest."""
    data = tmp_path / "data"
    configure_logging(data, level="error")
    rt = Runtime(data, Config(), embedder=embedder).start()
    try:
        ingest_path(rt, write_tree(tmp_path / "p", TOPICS), project="proj")
        recall_text(
            ActorReads(rt),
            RecallArgs(
                question="q",
                plan=[
                    {"tool": "search", "args": {"query": "espresso"}},
                    {"tool": "kg_query", "args": {"subject": "x"}},
                ],
            ),
        )
    finally:
        rt.stop()
    recalls = load_recalls([log_path(data)])
    assert len(recalls) == 1
    (events,) = recalls.values()
    kinds = [(e["message"], e.get("step")) for e in events]
    assert ("recall.step", 1) in kinds and ("recall.step", 2) in kinds
    assert ("vector_query", 1) in kinds and ("fact_query", 2) in kinds  # reads carry the step
    assert ("recall.gather", -1) in kinds
    console = Console(width=160, record=True)
    assert render_trace(log_path(data), console=console) == 0
    out = console.export_text()
    assert "planning" not in out  # no model: no model rows, nothing ran "during planning"
    assert "step 1" in out and "step 2" in out and "<- slowest" in out
    assert "StepRunner-1" in out and "queue ms" in out
