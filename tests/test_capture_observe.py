"""Capture that remembers the answers: typed observations from each captured turn, dated by
the turn and linked to it, kept once; reversals that supersede (reversibly); Imprint's own
tool outputs never captured back, in each client's naming; a briefing of what holds now."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from imprint.actors.lifecycle import Runtime
from imprint.actors.read_messages import FetchRecords, Newest, SupersedeLinks
from imprint.capture.session import capture_event
from imprint.reads.briefing import briefing_text
from imprint.reads.deadline import Deadline
from imprint.reads.gateway import ActorReads
from imprint.reads.memory import GetMemoryArgs, memory_row
from imprint.reads.search import SearchArgs, search
from imprint.store.records import Record
from imprint.writes import Writes
from tests import test_tools
from tests.support.capture_support import Transcript

PROJECT = "worker-app"
session = test_tools.session  # the in-memory MCP session over a fresh runtime


def _at(day: str) -> str:
    return f"{day}T10:00:00.000Z"


def _epoch(day: str) -> float:
    return datetime.fromisoformat(f"{day}T10:00:00+00:00").timestamp()


class DatedTranscript(Transcript):
    """A Claude Code transcript whose lines carry the session's own day."""

    def __init__(self, path: Path, session_id: str, cwd: Path, day: str) -> None:
        super().__init__(path, session_id, cwd)
        self.day = day

    def _line(self, obj: dict[str, Any]) -> str:
        line = json.loads(super()._line(obj))
        line["timestamp"] = _at(self.day)
        return json.dumps(line) + "\n"


def _session(tmp_path: Path, sid: str, day: str) -> DatedTranscript:
    cwd = tmp_path / PROJECT
    cwd.mkdir(exist_ok=True)
    return DatedTranscript(tmp_path / "projects" / f"{sid}.jsonl", sid, cwd, day)


def _observations(rt: Runtime) -> list[Record]:
    reads = ActorReads(rt)
    ws = reads.open("")
    return Deadline(30).wait(
        reads.ask(
            Newest(workspace=ws, project=PROJECT, kinds=("observation", "open-problem"), limit=99)
        ),
        "test",
    )


def _first_hit(rt: Runtime, query: str) -> str:
    rows = search(ActorReads(rt), SearchArgs(query=query, project=PROJECT))
    return rows.hits[0].record.content


def test_each_turn_yields_typed_observations_dated_by_the_turn_and_linked_to_it(
    tmp_path: Path, rt: Runtime
) -> None:
    """A decision, a fix (after a failing run, an edit and a passing run), a standing
    preference and a dated fact are each a memory of their type, dated by the turn that said
    them (not the capture), sourced `session:<id>#<chunk>`, naming the files edited; a
    question and a plan are not kept; capturing again writes nothing twice."""
    t = _session(tmp_path, "s-one", "2026-11-02")
    t.turn("Which task queue for the worker?", "Should we use Celery? Let me check the docs.")
    t.turn("Let's go with Celery for the worker's task queue.", "Done, Celery it is.")
    t.turn(
        "The parser runs out of memory.",
        "I ran it.",
        command="python parse.py",
        output="MemoryError",
        error=True,
    )
    t.turn(
        "fix it",
        "Fixed: the parser now streams page by page with pypdfium2.",
        edit="ingest/pdf.py",
        output="ok",
    )
    t.turn("From now on please write commit messages in the imperative mood.", "OK.")
    t.turn("Ops says: since 2026-11-01 the staging database lives on pg-staging-3.", "Noted.")
    writes = Writes(rt)
    capture_event(writes, rt.data_dir, t.event())
    found = {(r.type, r.content) for r in _observations(rt)}
    assert ("decision", "Let's go with Celery for the worker's task queue.") in found
    assert (
        "bug",
        "Fixed: the parser now streams page by page with pypdfium2.",
    ) in found
    assert (
        "preference",
        "From now on please write commit messages in the imperative mood.",
    ) in found
    assert any(kind == "finding" and "pg-staging-3" in text for kind, text in found)
    assert not any("Should we use" in text or "Let me check" in text for _, text in found)
    by_text = {r.content: r for r in _observations(rt)}
    fix = by_text["Fixed: the parser now streams page by page with pypdfium2."]
    assert fix.source.startswith("session:s-one#") and "ingest/pdf.py" in fix.context
    assert fix.created_at == _epoch("2026-11-02")
    fact = next(r for r in by_text.values() if "pg-staging-3" in r.content)
    assert fact.created_at == datetime(2026, 11, 1, tzinfo=UTC).timestamp()  # valid from
    before = len(_observations(rt))
    (rt.data_dir / "capture" / "sessions" / "s-one.json").unlink()  # a state lost to a kill
    capture_event(writes, rt.data_dir, t.event())
    assert len(_observations(rt)) == before


def test_the_same_decision_in_a_later_session_adds_that_session_not_a_memory(
    tmp_path: Path, rt: Runtime
) -> None:
    """An observation equal to an earlier one (same project, same normalized text) is one
    memory that names both sessions."""
    writes = Writes(rt)
    for sid, day in (("s-a", "2026-11-02"), ("s-b", "2026-11-05")):
        t = _session(tmp_path, sid, day)
        t.turn("We'll use Prisma as the ORM for the billing service.", "OK.")
        capture_event(writes, rt.data_dir, t.event())
    same = [r for r in _observations(rt) if "Prisma" in r.content]
    assert len(same) == 1
    assert "session:s-a#" in same[0].context and "session:s-b#" in same[0].context


def test_a_reversed_decision_is_superseded_hidden_from_search_and_restorable(
    tmp_path: Path, rt: Runtime
) -> None:
    """Celery chosen, then Dramatiq instead of Celery four days later: the Celery decision is
    superseded (get_memory says by what), search answers the task-queue question with
    Dramatiq, the briefing shows Dramatiq and never Celery as current; restore shows it
    again and deletes nothing."""
    writes = Writes(rt)
    first = _session(tmp_path, "s-old", "2026-11-02")
    first.turn("Let's go with Celery for the ingestion worker's task queue.", "OK.")
    capture_event(writes, rt.data_dir, first.event())
    second = _session(tmp_path, "s-new", "2026-11-06")
    second.turn(
        "Celery loses tasks. Let's move the ingestion worker from Celery to Dramatiq.",
        "We're switching the ingestion worker to Dramatiq instead of Celery.",
    )
    capture_event(writes, rt.data_dir, second.event())
    records = {r.content: r for r in _observations(rt)}
    old = records["Let's go with Celery for the ingestion worker's task queue."]
    reads = ActorReads(rt)
    ws = reads.open("")
    links = Deadline(30).wait(reads.ask(SupersedeLinks(workspace=ws, ids=(old.id,))), "test")
    assert [link.old for link in links] == [old.id]
    new = next(r for r in records.values() if r.id == links[0].new)
    assert "Dramatiq" in new.content
    row = memory_row(reads, ws, GetMemoryArgs(id=old.id))
    assert row.superseded_by is not None and row.superseded_by.new == new.id
    assert "Dramatiq" in _first_hit(rt, "which task queue does the ingestion worker use")
    hits = search(reads, SearchArgs(query="Celery task queue", project=PROJECT)).hits
    assert old.id not in [h.record.id for h in hits]
    brief = briefing_text(reads, ws, PROJECT, 2000, Deadline(30))
    current = brief.split("Last sessions:")[0]
    assert "Dramatiq" in current and "go with Celery" not in current

    from imprint.writes.memories import restore_memories

    assert "restored" in restore_memories(writes, [old.id])
    hits = search(reads, SearchArgs(query="Celery task queue", project=PROJECT)).hits
    assert old.id in [h.record.id for h in hits]
    assert new.id in {r.id for r in _observations(rt)}


def test_restore_refuses_an_id_that_is_not_superseded_and_changes_nothing(
    tmp_path: Path, rt: Runtime
) -> None:
    """`restore` of an unknown id or of a memory nothing supersedes: a one-line error."""
    from imprint.writes.memories import restore_memories

    writes = Writes(rt)
    t = _session(tmp_path, "s-r", "2026-11-02")
    t.turn("We'll use Prisma as the ORM.", "OK.")
    capture_event(writes, rt.data_dir, t.event())
    rid = _observations(rt)[0].id
    with pytest.raises(Exception, match=r"restore: memory .* is not superseded"):
        restore_memories(writes, [rid])
    with pytest.raises(Exception, match="restore: no memory"):
        restore_memories(writes, ["0123456789abcdef"])


ECHO = "We decided to use MongoDB for invoices. Let's go with Kafka for the queue."


def _claude_echo(tmp_path: Path, name: str) -> dict[str, str]:
    t = _session(tmp_path, "s-echo", "2026-11-02")
    t.append(
        {"type": "user", "message": {"role": "user", "content": "what did we decide?"}},
        {
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": name,
                        "input": {"query": "queue decision"},
                    }
                ],
            },
        },
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": ECHO}],
            },
        },
        {
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "The memory answers it."}],
            },
        },
    )
    return {**t.event(), "client": "claude-code"}


def _codex_echo(tmp_path: Path, name: str) -> dict[str, str]:
    path = tmp_path / "rollout-echo.jsonl"
    ts = _at("2026-11-02")
    lines = [
        {"timestamp": ts, "type": "session_meta", "payload": {"id": "s-echo"}},
        {
            "timestamp": ts,
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "what did we decide?"}],
            },
        },
        {
            "timestamp": ts,
            "type": "response_item",
            "payload": {
                "type": "function_call",
                "name": name,
                "call_id": "c1",
                "arguments": json.dumps({"query": "queue decision"}),
            },
        },
        {
            "timestamp": ts,
            "type": "response_item",
            "payload": {"type": "function_call_output", "call_id": "c1", "output": ECHO},
        },
        {
            "timestamp": ts,
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "The memory answers it."}],
            },
        },
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    cwd = tmp_path / PROJECT
    cwd.mkdir(exist_ok=True)
    return {
        "session_id": "s-echo",
        "transcript_path": str(path),
        "cwd": str(cwd),
        "client": "codex",
    }


def _gemini_echo(tmp_path: Path, name: str) -> dict[str, str]:
    path = tmp_path / "session-echo.jsonl"
    ts = _at("2026-11-02")
    result = [{"functionResponse": {"id": "c1", "name": name, "response": {"output": ECHO}}}]
    lines = [
        {"sessionId": "s-echo", "startTime": ts, "kind": "main"},
        {"id": "m1", "timestamp": ts, "type": "user", "content": [{"text": "what did we decide?"}]},
        {
            "id": "m2",
            "timestamp": ts,
            "type": "gemini",
            "content": "The memory answers it.",
            "toolCalls": [
                {
                    "id": "c1",
                    "name": name,
                    "args": {"query": "queue decision"},
                    "status": "success",
                    "result": result,
                }
            ],
        },
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    cwd = tmp_path / PROJECT
    cwd.mkdir(exist_ok=True)
    return {
        "session_id": "s-echo",
        "transcript_path": str(path),
        "cwd": str(cwd),
        "client": "gemini",
    }


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (_claude_echo, "mcp__imprint__search"),
        (_claude_echo, "mcp__plugin_imprint_imprint__recall"),
        (_codex_echo, "imprint.search"),
        (_codex_echo, "mcp__imprint__search"),
        (_gemini_echo, "mcp_imprint_search"),
    ],
)
def test_imprint_tool_outputs_are_never_captured_back(
    tmp_path: Path, rt: Runtime, make: Any, name: str
) -> None:
    """A search result of Imprint's own, in each client's naming, is left out of the stored
    turn and yields no observation; the call and its arguments stay."""
    event = make(tmp_path, name)
    capture_event(Writes(rt), rt.data_dir, event)
    reads = ActorReads(rt)
    from tests.support.capture_support import session_records

    stored = " ".join(r.content for r in session_records(rt, PROJECT, "session:s-echo"))
    assert "MongoDB" not in stored and "Kafka" not in stored
    assert name in stored and "queue decision" in stored
    assert _observations(rt) == []
    assert reads is not None


def test_a_briefing_copied_into_a_prompt_is_not_captured(tmp_path: Path, rt: Runtime) -> None:
    """Imprint's briefing pasted into the conversation's text is cut out before capture."""
    t = _session(tmp_path, "s-brief", "2026-11-02")
    briefing = (
        "Imprint memory for project worker-app (newest first):\nDecisions:\n"
        "- We'll use Celery for the queue. (id 0123456789abcdef, 2026-11-01)\n"
        'For more: search(query, project="worker-app") or recall(question).'
    )
    t.turn(f"{briefing}\nthanks, now add a test", "Added the test.")
    capture_event(Writes(rt), rt.data_dir, t.event())
    from tests.support.capture_support import session_records

    stored = " ".join(r.content for r in session_records(rt, PROJECT, "session:s-brief"))
    assert "Celery" not in stored and "add a test" in stored
    assert _observations(rt) == []


def test_an_error_left_unfixed_is_an_open_problem_until_a_later_session_gets_past_it(
    tmp_path: Path, rt: Runtime
) -> None:
    """A failing command with nothing after it that worked is an open problem in the
    briefing; a later session that gets past the same error supersedes it by its fix."""
    writes = Writes(rt)
    first = _session(tmp_path, "s-err", "2026-11-02")
    first.turn(
        "reindex crashed",
        "I'll look later.",
        command="python -m reindex",
        output="OperationalError: too many clients already",
        error=True,
    )
    capture_event(writes, rt.data_dir, first.event())
    reads = ActorReads(rt)
    ws = reads.open("")
    # What failed is named, never its output (a script's output is anyone's text: the
    # briefing hardening of issue 43).
    first_brief = briefing_text(reads, ws, PROJECT, 2000, Deadline(30))
    assert "python -m reindex failed" in first_brief and "too many clients" not in first_brief
    second = _session(tmp_path, "s-fix", "2026-11-04")
    second.turn(
        "fix the reindex",
        "Trying.",
        command="python -m reindex",
        output="OperationalError: too many clients already",
        error=True,
    )
    second.turn(
        "go on",
        "Fixed: reindex now shares one connection pool.",
        command="python -m reindex",
        output="reindexed 10 documents",
    )
    capture_event(writes, rt.data_dir, second.event())
    brief = briefing_text(reads, ws, PROJECT, 2000, Deadline(30))
    assert "Open problems" not in brief and "shares one connection pool" in brief


def test_the_store_tool_restores_a_superseded_memory(session: Any) -> None:
    """`store(content="", restore=[id])` shows a superseded memory again, names what had
    replaced it, and refuses a memory that is not superseded."""
    import re

    old = re.findall(r"[0-9a-f]{16}", session.ok("store", content="Queue: Celery.", project="q"))
    said = session.ok(
        "store", content="Queue: Dramatiq instead of Celery.", project="q", supersedes=old
    )
    new = re.findall(r"stored ([0-9a-f]{16})", said)[0]
    assert f"superseded by {new}" in session.ok("get_memory", id=old[0])
    assert session.ok("store", content="", restore=old) == (
        f"restored {old[0]} (was superseded by {new})"
    )
    assert "superseded by" not in session.ok("get_memory", id=old[0])
    assert "is not superseded" in session.error("store", content="", restore=old)


def test_deleting_a_session_takes_its_observations_with_it(tmp_path: Path, rt: Runtime) -> None:
    """`delete(source="session:<id>")` removes the session's turns, its summary and the
    observations capture kept from it."""
    from imprint.writes.memories import delete_records

    writes = Writes(rt)
    t = _session(tmp_path, "s-gone", "2026-11-02")
    t.turn("We'll use Prisma as the ORM for billing.", "OK.")
    capture_event(writes, rt.data_dir, t.event())
    assert _observations(rt)
    said = delete_records(writes, source="session:s-gone", project=PROJECT)
    assert said.endswith("; 1 observation of it)")
    assert _observations(rt) == []


def test_a_decision_said_in_many_sessions_keeps_its_vector_on_its_text(
    tmp_path: Path, rt: Runtime
) -> None:
    """Each later session that says an observation again adds itself to its context, and
    the context is embedded before the text: unbounded, forty sessions pushed the decision
    out of the embedder's window (its vector was the session list's). The context stays
    within the store's MAX_CONTEXT_CHARS, so search by the decision's own words still finds
    it about as close as after its first session."""
    from imprint.actors.read_messages import VectorQuery
    from imprint.store.context import MAX_CONTEXT_CHARS
    from imprint.store.records import Filters

    writes = Writes(rt)
    said = "We'll use Prisma as the ORM for the billing service."
    reads = ActorReads(rt)
    ws = reads.open("")

    def closeness() -> tuple[Record, float]:
        (kept,) = [r for r in _observations(rt) if "Prisma" in r.content]
        only = Filters(project=PROJECT, type="decision")
        asked = VectorQuery(workspace=ws, text=said, limit=5, filters=only)
        hits = dict(Deadline(30).wait(reads.ask(asked), "test"))
        return kept, hits.get(kept.id, 0.0)

    for n in range(40):
        t = _session(tmp_path, f"s-repeat-{n:03d}-{'x' * 40}", "2026-11-02")
        t.turn(said, "OK.")
        capture_event(writes, rt.data_dir, t.event())
        if n == 0:
            _, first = closeness()
    kept, last = closeness()
    assert len(kept.context) <= MAX_CONTEXT_CHARS, len(kept.context)
    assert "session:s-repeat-000-" in kept.context  # where it was first said stays named
    # Measured: 0.78 after the first session; after forty, 0.72 (0.08 before the bound).
    assert last >= first - 0.1, (first, last)


def test_deleting_a_session_takes_its_observations_however_many_the_project_has(
    tmp_path: Path, rt: Runtime
) -> None:
    """The session's delete looked for its observations among the project's newest 10,000
    only: in a project with more, an older session's observations (quoting what it said,
    the reason it was deleted perhaps) outlived its delete. They are found by their source
    now, all of them."""
    import numpy as np

    from imprint.store.records import WriteBatch
    from imprint.writes.memories import delete_records

    writes = Writes(rt)
    t = _session(tmp_path, "s-old", "2026-11-02")
    t.turn("We'll use Prisma as the ORM for the billing service.", "OK.")
    capture_event(writes, rt.data_dir, t.event())
    (old,) = [r for r in _observations(rt) if r.source.startswith("session:s-old#")]
    newer = [
        Record(
            id=f"{n:016x}",
            content=f"Decision: service {n} keeps its own queue.",
            project=PROJECT,
            source="session:s-new#0",
            source_type="memory",
            type="decision",
            kind="observation",
            created_at=_epoch("2026-11-20") + n,
        )
        for n in range(10_001)
    ]
    vector = rt.embedder().embed(["Decision: a service keeps its own queue."])[0]
    ws = writes.open("")
    for start in range(0, len(newer), 2_000):
        part = newer[start : start + 2_000]
        writes.write(ws, WriteBatch(upserts=tuple(part)), embeddings=np.array([vector] * len(part)))
    said = delete_records(writes, source="session:s-old", project=PROJECT)
    assert "1 observation of it" in said, said
    reads = ActorReads(rt)
    found = Deadline(30).wait(reads.ask(FetchRecords(workspace=ws, ids=(old.id,))), "test")
    assert old.id not in found


def test_deleting_the_first_of_two_sessions_keeps_what_the_second_said(
    tmp_path: Path, rt: Runtime
) -> None:
    """An observation two sessions stated is one memory sourced to the first: deleting that
    session leaves it, sourced to the second, which said it too; deleting the second too
    takes it."""
    from imprint.writes.memories import delete_records

    writes = Writes(rt)
    for sid, day in (("s-first", "2026-11-02"), ("s-again", "2026-11-05")):
        t = _session(tmp_path, sid, day)
        t.turn("From now on always write commit messages in the imperative mood.", "OK.")
        capture_event(writes, rt.data_dir, t.event())
    [kept] = _observations(rt)
    assert kept.source.startswith("session:s-first#") and "session:s-again#" in kept.context
    said = delete_records(writes, source="session:s-first", project=PROJECT)
    assert "observation" not in said
    [left] = _observations(rt)
    assert left.id == kept.id and left.content == kept.content
    assert left.source.startswith("session:s-again#")
    assert "s-first" not in left.context
    said = delete_records(writes, source="session:s-again", project=PROJECT)
    assert said.endswith("; 1 observation of it)")
    assert _observations(rt) == []


def test_a_clause_before_a_semicolon_is_prose_not_code(tmp_path: Path, rt: Runtime) -> None:
    """A sentence split at "; I'll ..." keeps its first clause as a statement: the fact it
    states is captured (a clause ending in ";" was taken for a line of code)."""
    t = _session(tmp_path, "s-semi", "2026-11-12")
    t.turn(
        "Did the sync server change? The app can't connect.",
        "Yes: the sync server moved to sync2.fieldapp.io on 2026-11-11; I'll update config.xml.",
    )
    capture_event(Writes(rt), rt.data_dir, t.event())
    facts = [r for r in _observations(rt) if r.type == "finding"]
    assert [r.content for r in facts] == [
        "The sync server moved to sync2.fieldapp.io on 2026-11-11"
    ]
    assert datetime.fromtimestamp(facts[0].created_at, UTC).date().isoformat() == "2026-11-11"


def test_a_change_the_assistant_says_it_made_to_files_is_a_fix_with_its_effect() -> None:
    """ "I've modified X to use Y instead of Z" in a turn that edited files states the fix
    (issue 44's real sessions: the pr command's fix was said only so), with the sentence
    saying what it does now; the same words in a turn that edited nothing are no fix."""
    from imprint.capture.observe import observe_turn
    from imprint.capture.transcript import ToolCall, Turn

    said = (
        "I've modified the `git log` command to use the range `${mergeBase}..${branch}` "
        "instead of just `${branch}`. This will now only show commits since the merge base."
    )
    edit = ToolCall("Edit", {"file_path": "src/domain/git.ts"}, "ok")
    turn = Turn(key="t1", at=_epoch("2026-11-20"), prompt="yes", texts=[said], tools=[edit])
    fixes = [o for o in observe_turn(turn) if o.kind == "fix"]
    assert len(fixes) == 1 and "since the merge base" in fixes[0].text, fixes
    assert fixes[0].files == ("src/domain/git.ts",)
    assert not [o for o in observe_turn(Turn(key="t2", texts=[said])) if o.kind == "fix"]
    plan = "I'll modify the `pr` method to limit the commit list to the merge base."
    assert not observe_turn(Turn(key="t3", texts=[plan], tools=[edit]))
