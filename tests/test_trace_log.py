"""Traces typed: one Outcome spelling, model phases that log their outcome, message kinds a
trace can tell apart, and one log reader that still reads logs written before."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pytest
from rich.console import Console

# Imported for the message classes they define: the kinds test walks them all.
import imprint.actors.read_messages
import imprint.actors.write_messages
import imprint.recall.coordinator
from imprint.actors._trace import Message
from imprint.actors.inference import Completion, InferenceProxy
from imprint.recall.model import answer, plan_steps
from imprint.trace import (
    build_waterfall,
    load_recalls,
    model_outcome,
    read_outcome,
    read_recall_events,
    render_svg,
    render_trace,
)
from imprint.types import Outcome

T0 = 1_700_000_000.0


def _line(ts: float, **fields: Any) -> str:
    return json.dumps({"timestamp": datetime.fromtimestamp(ts, UTC).isoformat(), **fields})


def _leaves(cls: type) -> list[type]:
    """The message classes under `cls` that are sent (no subclass of their own); pydantic's
    parametrised generics (`ReadMessage[Hits]`) are views of their origin, not classes of
    their own: the classes under them count, they do not."""

    def parametrised(c: type) -> bool:
        return bool(getattr(c, "__pydantic_generic_metadata__", {}).get("origin"))

    def below(c: type) -> list[type]:
        return [d for s in c.__subclasses__() for d in ([s] if not parametrised(s) else below(s))]

    subs = list(dict.fromkeys(below(cls)))
    if not subs:
        return [cls]
    return list(dict.fromkeys(leaf for s in subs for leaf in _leaves(s)))


def test_every_message_kind_is_distinct() -> None:
    """No two message classes share a kind, and none is left with the base's: a trace row's
    kind names exactly one message (the hybrid search's lexical read included)."""
    leaves = [c for c in _leaves(Message) if c.__module__.startswith("imprint.")]
    kinds = [cast(Any, c).kind for c in leaves]
    assert len(leaves) > 20
    assert "message" not in kinds, [c.__name__ for c in leaves if cast(Any, c).kind == "message"]
    assert len(set(kinds)) == len(kinds), sorted(kinds)
    read = imprint.actors.read_messages
    assert read.LexicalAndPhrase.kind != read.LexicalQuery.kind


def test_outcomes_are_spelled_once() -> None:
    """Every outcome is one snake_case word; a late skip is `skipped_late` wherever it is
    logged (actors, the inference actor), never `skipped-late`."""
    assert all(o.value.isidentifier() and o.value.islower() for o in Outcome)
    assert Outcome.SKIPPED_LATE == "skipped_late" and f"{Outcome.SKIPPED_LATE}" == "skipped_late"
    assert json.dumps({"outcome": Outcome.SKIPPED_COST}) == '{"outcome": "skipped_cost"}'


@pytest.mark.parametrize(
    ("raw", "read"),
    [
        ("skipped-late", Outcome.SKIPPED_LATE),  # older logs
        ("skipped-cost", Outcome.SKIPPED_COST),
        ("skipped_late", Outcome.SKIPPED_LATE),
        ("timeout", Outcome.TIMEOUT),
        (None, Outcome.OK),
        ("", Outcome.OK),
        ("exploded", Outcome.ERROR),  # unknown: shown as an error, never hidden
        (3, Outcome.ERROR),
    ],
)
def test_outcomes_read_in_either_spelling(raw: object, read: Outcome) -> None:
    """The log reader takes this version's spelling and the older one."""
    assert read_outcome(raw) is read


class _Answered:
    def __init__(self, result: Completion) -> None:
        self.result = result

    def get(self, timeout: float | None = None) -> Completion:
        return self.result


class _Model:
    """An inference proxy that answers every request with one completion at once."""

    def __init__(self, result: Completion) -> None:
        self.result = result

    def complete(self, req: Any) -> _Answered:
        return _Answered(self.result)


def _proxy(outcome: Outcome, **fields: Any) -> InferenceProxy:
    return cast(InferenceProxy, _Model(Completion(outcome=outcome, **fields)))


@pytest.mark.parametrize(
    ("completion", "fields", "phase", "note"),
    [
        (Outcome.TIMEOUT, {}, Outcome.TIMEOUT, "planning timed out"),
        (Outcome.STOPPED, {}, Outcome.TIMEOUT, "planning timed out"),
        (Outcome.SKIPPED_LATE, {}, Outcome.TIMEOUT, "planning timed out"),
        # The note says "timed out", the outcome does not guess from it.
        (
            Outcome.ERROR,
            {"detail": "ollama timed out"},
            Outcome.ERROR,
            "model error: ollama timed out",
        ),
        (Outcome.SKIPPED_COST, {"detail": "about 9 s"}, Outcome.FALLBACK, "planning skipped"),
        (Outcome.OK, {"data": {"steps": []}}, Outcome.FALLBACK, "no valid step from the model"),
        (Outcome.INVALID, {"text": "not json"}, Outcome.FALLBACK, "unparseable plan"),
    ],
)
def test_planning_reports_its_outcome(
    completion: Outcome, fields: dict[str, Any], phase: Outcome, note: str
) -> None:
    """The planning phase says how it ended as a field, beside its note for the caller."""
    planned = plan_steps(_proxy(completion, **fields), "q", ["proj"], time.monotonic() + 30)
    assert planned.outcome is phase and planned.note.startswith(note), planned


def test_planning_and_answering_past_the_deadline_are_skipped_late() -> None:
    """No time left: neither phase asks the model, and each says skipped_late."""
    model = _proxy(Outcome.OK, text="unused")
    gone = time.monotonic() - 1
    assert plan_steps(model, "q", ["proj"], gone).outcome is Outcome.SKIPPED_LATE
    assert answer(model, "q", "[1] a.md#0\nx", {1}, gone).outcome is Outcome.SKIPPED_LATE


@pytest.mark.parametrize(
    ("completion", "fields", "shown", "phase"),
    [
        (Outcome.TIMEOUT, {}, {1}, Outcome.TIMEOUT),
        (Outcome.ERROR, {"detail": "request timed out"}, {1}, Outcome.ERROR),
        (Outcome.OK, {"text": "It says nothing citable."}, {1}, Outcome.FALLBACK),
        (Outcome.OK, {"text": "unused"}, set(), Outcome.FALLBACK),  # no evidence shown
    ],
)
def test_answering_reports_its_outcome(
    completion: Outcome, fields: dict[str, Any], shown: set[int], phase: Outcome
) -> None:
    """The answering phase says how it ended as a field, whatever its note says."""
    model = _proxy(completion, **fields)
    replied = answer(model, "q", "[1] a.md#0\nx", shown, time.monotonic() + 30)
    assert replied.outcome is phase, replied


def _read(ts: float, recall_id: str, outcome: str) -> str:
    """Step 1's vector read, logged after 150 ms in the reader's mailbox."""
    read = {"event": "actor.message", "message": "vector_query", "step": 1}
    timing = {"actor": "VectorReader-0", "queue_ms": 150.0, "run_ms": 0.0}
    return _line(ts, recall_id=recall_id, outcome=outcome, **read, **timing)


def _old_and_new_log(path: Path) -> None:
    """Two recalls: r-old as logs before this version wrote them (no model outcome, a late
    skip spelled skipped-late), r-new with the model phase's outcome logged."""
    lines = [
        _line(T0, event="recall.start", recall_id="r-old", tools=["search"], timeout_sec=1.0),
        _read(T0 + 0.2, "r-old", "skipped-late"),
        _line(T0 + 1.0, event="recall.model.plan", recall_id="r-old", note="planning timed out"),
        "not json at all",
        _line(T0 + 2, event="recall.start", recall_id="r-new", tools=["search"], timeout_sec=1.0),
        _line(
            T0 + 2.5,
            event="recall.model.plan",
            recall_id="r-new",
            note="model error: the server timed out",
            outcome="error",
        ),
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_the_one_reader_reads_old_logs_for_trace_and_waterfall(tmp_path: Path) -> None:
    """An older log still traces: its late skip drawn as skipped_late, its model phase's
    outcome told by its note; a newer phase's logged outcome is read as logged."""
    log = tmp_path / "imprint.jsonl"
    _old_and_new_log(log)
    found = read_recall_events([log])
    assert list(found) == ["r-old", "r-new"]
    wf = build_waterfall("r-old", found["r-old"])
    assert [(b.kind, b.outcome) for b in wf.bars] == [("read", Outcome.SKIPPED_LATE)]
    assert wf.failed and 'data-outcome="skipped_late"' in render_svg(wf)
    rows = load_recalls([log])
    (old_plan,) = (e for e in rows["r-old"] if e["event"] == "recall.model.plan")
    (new_plan,) = rows["r-new"]
    assert model_outcome(old_plan) is Outcome.TIMEOUT
    assert model_outcome(new_plan) is Outcome.ERROR  # not guessed from "timed out"
    console = Console(width=200, record=True)
    assert render_trace(log, console=console) == 0
    out = console.export_text()
    assert out.count("hit the deadline") == 1  # the old recall's; the new one erred
    assert "skipped_late" in out and "skipped-late" not in out


def test_trace_of_one_recall_by_prefix(tmp_path: Path) -> None:
    """`imprint trace --recall` keeps the recalls whose id starts with the prefix."""
    log = tmp_path / "imprint.jsonl"
    _old_and_new_log(log)
    assert list(load_recalls([log], "r-n")) == ["r-new"]
    console = Console(width=200, record=True)
    assert render_trace(log, "r-x", console=console) == 1
    assert "no recall traces" in console.export_text()
