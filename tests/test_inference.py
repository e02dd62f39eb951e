"""The InferenceActor's deadlines and its one lock, with a fake provider and a fake clock."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any, cast

import pykka
import pytest

from imprint.actors import inference as inference_module
from imprint.actors.inference import (
    CompleteRequest,
    Inference,
    InferenceActor,
    InferenceProxy,
    ask_model,
)
from tests.support.fakes import FakeClock, FakeProvider

MESSAGES = ({"role": "user", "content": "hello"},)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(inference_module, "time", SimpleNamespace(monotonic=fake))
    return fake


def start(provider: FakeProvider) -> tuple[pykka.ActorRef[Any], InferenceProxy]:
    ref = InferenceActor.start(Inference(lambda: provider))
    return ref, cast(InferenceProxy, ref.proxy())


@pytest.fixture
def gates() -> Iterator[list[threading.Event]]:
    """Events a test may leave closed; all opened at teardown so no thread hangs."""
    made: list[threading.Event] = []
    yield made
    for event in made:
        event.set()


def gate(gates: list[threading.Event]) -> threading.Event:
    event = threading.Event()
    gates.append(event)
    return event


def request(clock: FakeClock, seconds: float, **kw: Any) -> CompleteRequest:
    return CompleteRequest(messages=MESSAGES, deadline=clock() + seconds, **kw)


def test_a_request_already_late_never_starts(clock: FakeClock) -> None:
    """Past its deadline on arrival: skipped, and the provider is never called."""
    provider = FakeProvider()
    _, proxy = start(provider)
    result = proxy.complete(request(clock, -1)).get(timeout=30)
    assert result.outcome == "skipped_late"
    assert provider.calls == []


def test_a_request_that_waited_behind_a_busy_one_past_its_deadline_never_starts(
    clock: FakeClock, gates: list[threading.Event]
) -> None:
    """B waits in the mailbox while A holds the model; B's deadline passes; B is skipped."""
    busy = gate(gates)
    provider = FakeProvider(prompt_gate=busy)
    _, proxy = start(provider)
    first = proxy.complete(request(clock, 60, purpose="tag"))
    assert provider.prompt_started.wait(timeout=30)
    second = proxy.complete(request(clock, 5, purpose="recall.plan"))
    clock.advance(10)  # B's deadline passes while it waits in the mailbox
    busy.set()
    assert first.get(timeout=30).outcome == "ok"
    late = second.get(timeout=30)
    assert late.outcome == "skipped_late"
    assert len(provider.calls) == 1


def test_generation_stops_at_the_first_piece_past_the_deadline_and_closes_the_stream(
    clock: FakeClock, gates: list[threading.Event]
) -> None:
    """Pieces before the deadline are kept; the first one after it ends the stream."""
    token_gates = [gate(gates) for _ in range(4)]
    provider = FakeProvider(tokens=["a", "b", "c", "d"], token_gates=token_gates)
    _, proxy = start(provider)
    future = proxy.complete(request(clock, 5))
    token_gates[0].set()
    token_gates[1].set()
    assert provider.prompt_finished.wait(timeout=30)
    clock.advance(10)  # the deadline passes between pieces
    token_gates[2].set()
    result = future.get(timeout=30)
    assert result.outcome == "stopped"
    assert result.text in ("abc", "ab", "a")  # up to the first piece seen past the deadline
    assert result.text != "abcd"
    assert provider.closed == [True]  # the generator was closed before its end


def test_a_timed_out_prompt_finishes_in_the_background_and_is_dropped(
    clock: FakeClock, gates: list[threading.Event]
) -> None:
    """The caller gives up at its deadline; the prompt still completes after it returned."""
    busy = gate(gates)
    provider = FakeProvider(prompt_gate=busy)
    _, proxy = start(provider)
    req = request(clock, 0.05)  # the caller waits 50 ms of real time
    result = ask_model(proxy, req)
    assert result.outcome == "timeout"
    assert not provider.prompt_finished.is_set()  # the caller returned mid-prompt
    clock.advance(1)
    busy.set()
    assert provider.prompt_finished.wait(timeout=30)  # finished in the background
    # The actor is free again: the next request is served normally.
    assert proxy.complete(request(clock, 60)).get(timeout=30).outcome == "ok"
    assert provider.closed[0] is True  # the dropped one stopped at its first piece


def test_tagging_and_recall_are_serialized_through_the_one_actor(
    clock: FakeClock, gates: list[threading.Event]
) -> None:
    """Concurrent callers never overlap inside the provider: the mailbox is the lock."""
    release = gate(gates)
    provider = FakeProvider(prompt_gate=release)
    _, proxy = start(provider)
    futures = []
    threads = []

    def call(purpose: str) -> None:
        futures.append(proxy.complete(request(clock, 60, purpose=purpose)))

    for purpose in ("tag", "recall.plan", "tag", "recall.answer", "summary"):
        threads.append(threading.Thread(target=call, args=(purpose,)))
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    release.set()
    outcomes = [f.get(timeout=30).outcome for f in futures]
    assert outcomes == ["ok"] * 5
    assert provider.max_inside == 1
    assert len(provider.calls) == 5


def test_schema_output_is_validated(clock: FakeClock) -> None:
    """With a schema, conforming JSON is parsed; anything else is reported invalid."""
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    good = Inference(lambda: FakeProvider(tokens=['{"n": ', "3}"]))
    result = good.complete(request(clock, 60, json_schema=schema))
    assert result.outcome == "ok" and result.data == {"n": 3}
    bad = Inference(lambda: FakeProvider(tokens=['{"n": "three"}']))
    result = bad.complete(request(clock, 60, json_schema=schema))
    assert result.outcome == "invalid" and "breaks the schema" in result.detail
    prose = Inference(lambda: FakeProvider(tokens=["sure! here it is"]))
    assert prose.complete(request(clock, 60, json_schema=schema)).outcome == "invalid"


def test_a_provider_error_is_a_result_not_a_dead_actor(clock: FakeClock) -> None:
    """A failing provider gives an error completion; the actor keeps serving."""
    provider = FakeProvider(fail="fake: connection refused")
    _, proxy = start(provider)
    result = proxy.complete(request(clock, 60)).get(timeout=30)
    assert result.outcome == "error" and result.detail == "fake: connection refused"
    assert proxy.complete(request(clock, 60)).get(timeout=30).outcome == "error"
