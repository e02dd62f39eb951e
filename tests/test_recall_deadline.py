"""A recall's deadline is when its answer arrives: the tail after the last wait (merge,
budget, format, hand-back) is measured and reserved inside it; steps that cannot finish in
what is left are given up; background work (capture, watch batches, re-embedding, backups)
waits for its turn while a recall is in flight."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from imprint._priority import Priority
from imprint.actors.lifecycle import Runtime
from imprint.capture.session import load_state
from imprint.capture.worker import CaptureWorker
from imprint.config import Config
from imprint.hooklib.queue import enqueue
from imprint.reads.deadline import RESERVE_FLOOR_SEC, RESERVE_MAX_SHARE, Reserve
from imprint.reads.gateway import ActorReads
from imprint.recall import coordinator
from imprint.recall.respond import RecallArgs, recall_reserve, recall_text
from imprint.store.embedder import Embedder
from imprint.watch.host import WatchHost
from imprint.writes.backup import make_backup
from imprint.writes.files import ingest_path
from tests.conftest import TOPICS, write_tree
from tests.support.capture_support import Transcript
from tests.support.fakes import FakeClock, FakeProvider
from tests.support.hardening import call

WAIT_SEC = 60.0
QUESTION = "espresso and gardens"
PLAN = json.dumps(
    {
        "steps": [
            {"tool": "search", "args": {"query": "garden compost"}},
            {"tool": "kg_query", "args": {"subject": "garden"}},
        ]
    }
)


# -- the estimate ------------------------------------------------------------------------


def test_the_estimate_takes_a_new_peak_at_once_and_eases_down() -> None:
    """A slower tail raises the reserve at once; faster ones lower it a step at a time."""
    reserve = Reserve(contention=lambda: 1.0)
    assert reserve.seconds(2.0) == RESERVE_FLOOR_SEC  # nothing measured: the floor
    reserve.observe(0.3, 0.0)
    assert reserve.seconds(2.0) == pytest.approx(0.3)
    reserve.observe(0.1, 0.0)
    assert reserve.seconds(2.0) == pytest.approx(0.26)  # a fifth of the gap closed
    for _ in range(40):
        reserve.observe(0.0, 0.0)
    assert reserve.seconds(2.0) == RESERVE_FLOOR_SEC  # a quiet machine: back to the floor
    reserve.observe(5.0, 0.0)
    assert reserve.seconds(2.0) == 2.0 * RESERVE_MAX_SHARE  # never more than half the budget


def test_the_estimate_counts_the_calls_in_flight_and_the_hand_back() -> None:
    """The tail's own CPU time is spent once per call in flight (they format one after
    another, longer on busier cores); the transport's hand-back comes on top."""
    load = [1.0]
    reserve = Reserve(contention=lambda: load[0])
    reserve.observe(0.02, 0.01)
    assert reserve.seconds(10.0, in_flight=1) == pytest.approx(0.05)  # the floor
    assert reserve.seconds(10.0, in_flight=16) == pytest.approx(0.16)
    reserve.transport.observe(0.04)
    assert reserve.seconds(10.0, in_flight=16) == pytest.approx(0.20)
    load[0] = 2.0  # two runnable tasks per core
    assert reserve.seconds(10.0, in_flight=16) == pytest.approx(0.36)


def test_a_tail_is_measured_from_the_deadline_it_ran_into() -> None:
    """A wait that ran past its deadline counts from the deadline: waking late is tail too."""
    clock, cpu = FakeClock(100.0), FakeClock(0.0)
    reserve = Reserve(clock=clock, cpu_clock=cpu)
    with reserve.tail(work_by=99.7):  # the wait gave up 0.3 s late
        clock.advance(0.1)
        cpu.advance(0.02)
    assert reserve.wall.value == pytest.approx(0.4)
    assert reserve.cpu.value == pytest.approx(0.02)
    with reserve.tail(work_by=200.0):  # answered early: from the end of the wait
        clock.advance(0.5)
    assert reserve.wall.value == pytest.approx(0.5)  # a new peak
    assert reserve.wall.samples == 2


def test_steps_that_do_not_fit_are_refused_and_the_refusal_eases_the_estimate() -> None:
    """Steps estimated longer than what is left are refused; each refusal eases the
    estimate, so one slow group cannot stop every later recall from asking."""
    reserve = Reserve()
    reserve.steps.observe(1.0)
    assert reserve.steps_fit(1.5)
    assert not reserve.steps_fit(0.5)
    assert reserve.steps.value == pytest.approx(0.8)
    assert not reserve.steps_fit(0.0)  # nothing left: never asked
    fits = [reserve.steps_fit(0.5) for _ in range(5)]
    assert fits[-1]


# -- recalls through a real runtime ---------------------------------------------------------


def _runtime(tmp_path: Path, embedder: Embedder, provider: FakeProvider, **recall: Any) -> Runtime:
    config = Config()
    config.recall.llm = True
    config.tagger.provider = "local"
    for key, value in recall.items():
        setattr(config.recall, key, value)
    rt = Runtime(tmp_path / "data", config, embedder=embedder, provider_factory=lambda: provider)
    rt.start()
    ingest_path(rt, write_tree(tmp_path / "p", TOPICS), project="proj")
    return rt


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


def test_the_model_works_to_the_callers_deadline_less_the_measured_tail(
    tmp_path: Path, embedder: Embedder, gate: threading.Event
) -> None:
    """The stress case's cause, replayed: a model too busy to plan. Planning gives up at the
    caller's deadline less the reserved tail (not at the deadline itself, which answered
    that tail late), the evidence still comes back, and the recall's own tail is measured."""
    provider = FakeProvider(call_gates=[gate])  # planning never starts in time
    rt = _runtime(tmp_path, embedder, provider, llm_timeout_sec=3.0)
    try:
        reserve = recall_reserve(rt)
        reserve.observe(1.0, 0.0)  # the tails measured before this recall
        text = recall_text(ActorReads(rt), RecallArgs(question=QUESTION))
        assert text.startswith("note: planning timed out\n")
        assert "[1] " in text  # the baseline search's evidence
        call = provider.calls[0]
        # The caller's deadline is its start + 3 s; its start came before the model call.
        assert call["deadline"] <= call["started"] + 3.0 - 1.0
        assert reserve.wall.samples == 2  # this recall's tail was measured
    finally:
        gate.set()
        rt.stop()


def test_steps_that_cannot_finish_in_what_is_left_are_given_up(
    tmp_path: Path, embedder: Embedder
) -> None:
    """After planning, the model's steps are not asked when what is left of the deadline
    would not answer them: their lines say so, the baseline's evidence stands."""
    provider = FakeProvider(responses=[[PLAN]])
    rt = _runtime(tmp_path, embedder, provider, llm_timeout_sec=20.0)
    try:
        recall_reserve(rt).steps.observe(60.0)  # steps took a minute last time
        text = recall_text(ActorReads(rt), RecallArgs(question=QUESTION, condense=False))
        assert "step 2 search(query='garden compost'): skipped_late: not run: too little" in text
        assert "step 3 kg_query(subject='garden'): skipped_late: not run" in text
        assert "[1] " in text
    finally:
        rt.stop()


def test_a_callers_plan_gathers_to_its_deadline_less_the_tail(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the model, a plan's steps carry the caller's deadline less the reserve too."""
    rt = Runtime(tmp_path / "data", Config(), embedder=embedder).start()
    seen: list[float] = []
    asked = coordinator.RecallPools.ask

    def ask(self: coordinator.RecallPools, request: Any, cwd: str) -> Any:
        seen.append(request.deadline)
        return asked(self, request, cwd)

    monkeypatch.setattr(coordinator.RecallPools, "ask", ask)
    try:
        ingest_path(rt, write_tree(tmp_path / "p", TOPICS), project="proj")
        recall_reserve(rt).observe(2.0, 0.0)
        plan = [{"tool": "search", "args": {"query": "garden"}}]
        text = recall_text(
            ActorReads(rt), RecallArgs(question=QUESTION, plan=plan), timeout_sec=6.0
        )
        returned = time.monotonic()
        assert "[1] " in text
        # Asked before it returned, with 6 s less the 2 s reserved.
        assert seen[0] <= returned + 6.0 - 2.0
    finally:
        rt.stop()


# -- background work yields -----------------------------------------------------------------


def test_a_turn_waits_for_the_interactive_calls_in_flight() -> None:
    """A background turn waits while an interactive call is in flight and goes on the
    moment the last one finishes; with none in flight it does not wait at all."""
    priority = Priority()
    assert priority.turn("idle") == 0.0
    done = threading.Event()
    with priority.interactive(), priority.interactive():
        worker = threading.Thread(target=lambda: (priority.turn("bg"), done.set()))
        worker.start()
        assert priority.wait_for_waiting(1, WAIT_SEC)
        assert not done.is_set()
    worker.join(WAIT_SEC)
    assert done.is_set() and priority.deferred == 1 and priority.overdue == 0


def test_a_turn_is_not_held_past_its_longest_deferral() -> None:
    """A steady stream of interactive calls cannot stop background work for good."""
    clock = FakeClock()
    priority = Priority(max_defer_sec=0.0, clock=clock)
    with priority.interactive():
        priority.turn("bg")
    assert priority.overdue == 1


def test_a_deferred_step_is_sent_when_the_last_call_finishes() -> None:
    """An actor's next background step (re-embedding) is sent once no call is in flight."""
    priority = Priority()
    sent: list[str] = []
    priority.after_interactive(lambda: sent.append("now"))
    with priority.interactive():
        priority.after_interactive(lambda: sent.append("later"))
        assert sent == ["now"]
    assert sent == ["now", "later"]


def test_a_deferred_step_is_not_held_past_its_longest_deferral() -> None:
    """Overlapping interactive calls (one always in flight) cannot stop an actor's next
    background step for good: once it has waited `max_defer_sec` it is sent as the next
    call starts or finishes, as a `turn` would give up waiting."""
    clock = FakeClock()
    priority = Priority(max_defer_sec=5.0, clock=clock)
    sent: list[str] = []
    with contextlib.ExitStack() as first:
        first.enter_context(priority.interactive())
        priority.after_interactive(lambda: sent.append("reindex"))
        for _ in range(4):  # each call starts before the one before it finishes
            second = contextlib.ExitStack()
            second.enter_context(priority.interactive())
            first.close()
            first = second
            clock.advance(2.0)
        assert priority.in_flight == 1
        assert sent == ["reindex"]
        assert priority.overdue == 1
    assert sent == ["reindex"]  # sent once, not again as the last call finishes


def _held_recall(rt: Runtime) -> threading.Thread:
    """A recall that stays in flight until the test opens its model's gate."""
    thread = threading.Thread(
        target=recall_text, args=(ActorReads(rt), RecallArgs(question=QUESTION)), daemon=True
    )
    thread.start()
    return thread


def test_capture_waits_for_a_recall_in_flight(
    tmp_path: Path, embedder: Embedder, gate: threading.Event
) -> None:
    """A capture queued while a recall is in flight waits for that recall to answer, then
    captures (and only then asks the model for its summary)."""
    provider = FakeProvider(call_gates=[gate])
    rt = _runtime(tmp_path, embedder, provider, llm_timeout_sec=30.0)
    cwd = tmp_path / "demo-project"
    cwd.mkdir()
    t = Transcript(tmp_path / "claude" / "sess-p.jsonl", "sess-p", cwd)
    t.turn("why the kestrel", "because of the kestrel marker")
    worker = CaptureWorker(rt.data_dir, lambda _timeout: rt)
    captured = threading.Event()
    finish = worker._finish

    def finished(taken: Any) -> None:
        finish(taken)
        if load_state(rt.data_dir, "sess-p") is not None:
            captured.set()

    worker._finish = finished  # type: ignore[method-assign]
    try:
        recall = _held_recall(rt)
        assert provider.prompt_started.wait(WAIT_SEC)  # the recall is planning
        enqueue(rt.data_dir, t.event())
        worker.start()
        worker.poke()
        assert rt.priority.wait_for_waiting(1, WAIT_SEC)  # the capture waits its turn
        assert load_state(rt.data_dir, "sess-p") is None
        gate.set()
        recall.join(WAIT_SEC)
        assert captured.wait(WAIT_SEC)
        # The capture's summary asked the model only once the recall had answered.
        assert len(provider.calls) == 2 and "gist" in json.dumps(provider.calls[1]["schema"])
    finally:
        gate.set()
        worker.stop()
        rt.stop()


def test_a_watch_batch_waits_for_a_recall_in_flight(
    tmp_path: Path, embedder: Embedder, gate: threading.Event
) -> None:
    """A watched folder's batch does not read, embed or write a file while a recall is in
    flight; it goes on once the recall has answered."""
    provider = FakeProvider(call_gates=[gate])
    rt = _runtime(tmp_path, embedder, provider, llm_timeout_sec=30.0)
    tree = tmp_path / "watched"
    tree.mkdir()
    (tree / "a.md").write_text("# A\n\nopalwren first text\n")
    host = WatchHost(rt.data_dir, lambda _t: rt, quiet_sec=0.1, max_wait_sec=2.0).start()
    try:
        recall = _held_recall(rt)
        assert provider.prompt_started.wait(WAIT_SEC)
        host.add(str(tree))
        watcher = host.watcher(str(tree.resolve()))
        assert watcher is not None
        assert rt.priority.wait_for_waiting(1, WAIT_SEC)  # its rescan waits at the first file
        assert watcher.batches == 0
        gate.set()
        recall.join(WAIT_SEC)
        assert watcher.wait(lambda w: w.batches >= 1, WAIT_SEC)
    finally:
        gate.set()
        host.stop()
        rt.stop()


def test_the_mcp_tools_hand_back_is_measured_into_the_reserve(
    tmp_path: Path, embedder: Embedder
) -> None:
    """A recall through an MCP session measures its hand-back from the worker thread to the
    transport, and that part of the tail is reserved for the next recall."""
    rt = Runtime(tmp_path / "data", Config(), embedder=embedder).start()
    try:
        ingest_path(rt, write_tree(tmp_path / "p", TOPICS), project="proj")
        is_error, text = call(rt, tmp_path, "recall", {"question": QUESTION})
        assert not is_error and "[1] " in text
        assert recall_reserve(rt).transport.samples == 1
    finally:
        rt.stop()


def test_the_read_tools_are_interactive_calls_too(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search through MCP holds the runtime's interactive mark while it reads, so
    background work waits for it as it waits for a recall."""
    rt = Runtime(tmp_path / "data", Config(), embedder=embedder).start()
    held: list[int] = []
    interactive = rt.priority.interactive

    @contextmanager
    def counted() -> Iterator[None]:
        with interactive():
            held.append(rt.priority.in_flight)
            yield

    monkeypatch.setattr(rt.priority, "interactive", counted)
    try:
        ingest_path(rt, write_tree(tmp_path / "p", TOPICS), project="proj")
        is_error, _ = call(rt, tmp_path, "search", {"query": "garden"})
        assert not is_error and held == [1]
    finally:
        rt.stop()


def test_a_rolling_backup_waits_for_a_call_in_flight(tmp_path: Path, embedder: Embedder) -> None:
    """A scheduled backup does not copy a workspace while an interactive call is in flight;
    a backup asked by a person (`imprint backup`) does not wait."""
    rt = Runtime(tmp_path / "data", Config(), embedder=embedder).start()
    try:
        ingest_path(rt, write_tree(tmp_path / "p", TOPICS), project="proj")
        made: list[Any] = []
        with rt.priority.interactive():
            asked = make_backup(rt, tmp_path / "asked")
            assert asked.verified
            rolling = threading.Thread(
                target=lambda: made.append(make_backup(rt, made_by="schedule"))
            )
            rolling.start()
            assert rt.priority.wait_for_waiting(1, WAIT_SEC)
            assert not made
        rolling.join(WAIT_SEC)
        assert made and made[0].verified
    finally:
        rt.stop()
