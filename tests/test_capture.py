"""Capture: transcript reading from an offset, the durable queue, idempotent capture into the
store as `session:<id>` with its summary memory, and the daemon's worker counting per client."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from imprint.actors.lifecycle import Runtime
from imprint.capture.formats import read_new
from imprint.capture.session import capture_event, load_state, session_project
from imprint.capture.worker import CaptureWorker
from imprint.hooklib.queue import CaptureEvent, client_stats, done, enqueue, take
from imprint.writes import Writes
from imprint.writes.memories import delete_records
from tests.support.capture_support import BRIEFING, Transcript, session_records


def _transcript(tmp_path: Path, sid: str = "sess-1") -> Transcript:
    cwd = tmp_path / "demo-project"
    cwd.mkdir(exist_ok=True)
    return Transcript(tmp_path / "claude" / f"{sid}.jsonl", sid, cwd)


def test_turns_are_read_from_the_offset_and_a_partly_written_line_waits(tmp_path: Path) -> None:
    """A read stops before a last line still being written and the next read, from the
    offset it returned, takes that line once it is complete."""
    t = _transcript(tmp_path)
    t.turn("first question", "first answer")
    half = json.dumps({"type": "user", "message": {"role": "user", "content": "second"}})
    t.append(partial=half[:20])
    batch = read_new(t.path, 0)
    assert [turn.prompt for turn in batch.turns] == ["first question"]
    assert batch.end == t.path.stat().st_size - 20
    with t.path.open("a") as handle:
        handle.write(half[20:] + "\n")
    again = read_new(t.path, batch.end)
    assert [turn.prompt for turn in again.turns] == ["second"]
    assert read_new(t.path, again.end).turns == []


def test_hook_output_and_injected_text_are_not_captured(tmp_path: Path) -> None:
    """Attachment lines (every hook's stdout: Imprint's briefing), meta messages and
    system reminders inside a prompt are left out; tool calls keep their trimmed output."""
    t = _transcript(tmp_path)
    t.hook_output()
    t.turn(
        f"fix the build<system-reminder>{BRIEFING}</system-reminder>",
        "Running the tests.",
        command="pytest -x",
        output="x" * 5000,
    )
    (turn,) = read_new(t.path, 0).turns
    assert turn.prompt == "fix the build"
    assert "kestrel-briefing" not in json.dumps(turn.__dict__, default=str)
    assert turn.tools[0].input == {"command": "pytest -x"}
    assert len(turn.tools[0].output) < 700


def test_queue_appends_survive_a_take_and_a_killed_drain(tmp_path: Path) -> None:
    """Events taken but not marked done (a daemon killed mid-drain) are taken again, before
    the ones queued after; done forgets them."""
    data = tmp_path / "data"
    enqueue(data, {"session_id": "a", "transcript_path": "/t/a.jsonl", "prompt": "not kept"})
    assert oct((data / "capture" / "queue.jsonl").stat().st_mode & 0o777) == "0o600"
    first = take(data)
    assert [e.session_id for e in first.events] == ["a"]
    assert first.events[0].as_dict().keys() == {"session_id", "transcript_path", "queued_at"}
    enqueue(data, {"session_id": "b"})
    second = take(data)  # the first take was never done: its events come again
    assert [e.session_id for e in second.events] == ["a", "b"]
    done(second)
    assert take(data).events == []


def test_a_queue_line_reads_back_as_the_event_it_was_written_from(tmp_path: Path) -> None:
    """The typed event a hook enqueues is what a take reads, its line in the old layout
    (the keys given, in order, then queued_at); a line that is no object is passed over."""
    data = tmp_path / "data"
    event = CaptureEvent(client="codex", session_id="s1", cwd="/w", attempts="2")
    enqueue(data, event)
    raw = (data / "capture" / "queue.jsonl").read_bytes()
    assert list(json.loads(raw)) == ["client", "session_id", "cwd", "attempts", "queued_at"]
    with (data / "capture" / "queue.jsonl").open("ab") as f:
        f.write(b"[1, 2]\nnot json\n")
    (got,) = take(data).events
    assert got == CaptureEvent(**{**event.as_dict(), "queued_at": got.queued_at})
    assert float(got.queued_at or "nan") > 0


def test_a_queue_the_previous_version_wrote_drains(tmp_path: Path, rt: Runtime) -> None:
    """Lines as the previous version wrote them (a dict of strings, an unknown key, a
    number where a string was) are read and captured, and the queue is emptied."""
    t = _transcript(tmp_path, "sess-old")
    t.turn("one", "answer one")
    data = rt.data_dir
    old = {"client": "claude-code", **t.event(), "attempts": 0, "queued_at": "1.5", "extra": "x"}
    folder = data / "capture"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "queue.jsonl").write_text(json.dumps(old) + "\n", encoding="utf-8")
    (event,) = take(data).events  # taken, never done: the drain takes it again
    assert event.session_id == "sess-old" and event.attempts == "0"
    assert CaptureWorker(data, lambda _timeout: rt).drain(Writes(rt)) == 1
    assert take(data).events == []
    assert client_stats(data)["claude-code"]["turns"] == 1


def test_capture_is_idempotent_and_keeps_the_summary_in_place(tmp_path: Path, rt: Runtime) -> None:
    """Capturing again writes nothing new; capturing again from offset 0 (a state lost to a
    kill) writes the same records over themselves; new turns add records and replace the
    one summary memory, which names files, commands, errors with what followed, decisions."""
    t = _transcript(tmp_path)
    t.turn("run the tests", "I ran them.", command="pytest tests/", output="1 failed", error=True)
    t.turn("fix it", "The fix is to close the socket first.", edit="src/net.py", output="ok")
    writes = Writes(rt)
    data = rt.data_dir
    project = session_project(str(t.cwd))
    assert project == "demo-project"
    assert capture_event(writes, data, t.event()) == 2
    assert capture_event(writes, data, t.event()) == 0
    first = session_records(rt, project, "session:sess-1")
    assert len([r for r in first if r.source_type == "content"]) == 2

    (data / "capture" / "sessions" / "sess-1.json").unlink()  # as if killed before saving
    assert capture_event(writes, data, t.event()) == 2
    assert sorted(r.id for r in session_records(rt, project, "session:sess-1")) == sorted(
        r.id for r in first
    )

    t.turn("and the docs", "We'll use MkDocs for the docs instead of Sphinx.")
    assert capture_event(writes, data, t.event("SessionEnd")) == 1
    records = session_records(rt, project, "session:sess-1")
    summaries = [r for r in records if r.kind == "session-summary"]
    assert len(summaries) == 1 and len(records) == 4
    summary = summaries[0].content
    for part in ("run the tests", "src/net.py", "pytest tests/ failed", "MkDocs", "3 turns"):
        assert part in summary, part
    assert "1 failed" not in summary  # a tool's output is never in the briefed summary
    assert "then Edit src/net.py" in summary
    state = load_state(data, "sess-1")
    assert state is not None and state.offset == t.path.stat().st_size


def test_deleting_the_session_source_removes_its_turns_and_its_summary(
    tmp_path: Path, rt: Runtime
) -> None:
    """`delete` of `session:<id>` takes every turn and the summary memory with it."""
    t = _transcript(tmp_path, "sess-del")
    t.turn("hello", "hi")
    writes = Writes(rt)
    capture_event(writes, rt.data_dir, t.event())
    assert len(session_records(rt, "demo-project", "session:sess-del")) == 2
    delete_records(writes, source="session:sess-del", project="demo-project")
    assert session_records(rt, "demo-project", "session:sess-del") == []


def test_a_secret_typed_in_a_transcript_is_stored_redacted(tmp_path: Path, rt: Runtime) -> None:
    """A key typed in a prompt and printed by a command reaches neither the records nor the
    session's state file: both hold `[redacted:...]` instead."""
    key = "sk-ant-api03-" + "Zq8xW2vK9mN4pL7rT1yB6cF3hJ5dG0sA" * 3
    t = _transcript(tmp_path, "sess-key")
    t.turn(f"use ANTHROPIC_API_KEY={key}", "ok", command="env", output=f"ANTHROPIC_API_KEY={key}")
    capture_event(Writes(rt), rt.data_dir, t.event())
    contents = " ".join(r.content for r in session_records(rt, "demo-project", "session:sess-key"))
    assert "[redacted:" in contents and key[:20] not in contents
    state = (rt.data_dir / "capture" / "sessions" / "sess-key.json").read_text()
    assert key[:20] not in state


def test_the_worker_drains_once_per_session_and_counts_per_client(
    tmp_path: Path, rt: Runtime
) -> None:
    """Three events of one session are one capture; an event naming no transcript is a
    failure, queued again until MAX_ATTEMPTS, and both show in client_stats."""
    t = _transcript(tmp_path, "sess-w")
    t.turn("one", "answer one")
    data = rt.data_dir
    for _ in range(3):
        enqueue(data, {"client": "claude-code", **t.event()})
    enqueue(data, {"client": "codex", "session_id": "gone", "transcript_path": "/nowhere.jsonl"})
    worker = CaptureWorker(data, lambda _timeout: rt)
    writes = Writes(rt)
    assert worker.drain(writes) == 1
    assert worker.drain(writes) == 0  # the failed event, queued again, fails again
    assert worker.drain(writes) == 0
    assert take(data).events == []  # given up after MAX_ATTEMPTS
    stats = client_stats(data)
    assert stats["claude-code"]["captures"] == 1 and stats["claude-code"]["turns"] == 1
    assert stats["codex"]["failures"] == 3 and "no transcript" in stats["codex"]["last_error"]


def test_the_worker_thread_drains_when_poked_and_stops(tmp_path: Path, rt: Runtime) -> None:
    """A started worker captures a queued session after a poke, and stop() ends its thread."""
    t = _transcript(tmp_path, "sess-t")
    t.turn("one", "answer one")
    enqueue(rt.data_dir, t.event())
    captured = threading.Event()
    worker = CaptureWorker(rt.data_dir, lambda _timeout: rt)
    original = worker._finish

    def finish(taken: object) -> None:
        original(taken)  # type: ignore[arg-type]
        if load_state(rt.data_dir, "sess-t") is not None:
            captured.set()

    worker._finish = finish  # type: ignore[method-assign]
    worker.start()
    worker.poke()
    assert captured.wait(60)
    worker.stop()
    assert worker._thread is not None and not worker._thread.is_alive()


def test_backfill_finds_each_kept_transcript_with_its_sessions_folder(tmp_path: Path) -> None:
    """Every `~/.claude/projects/*/<id>.jsonl` becomes one event: its session id, its path,
    and the cwd its lines name (the project the capture maps it to)."""
    from imprint.capture.backfill import claude_code_events

    home = tmp_path / "home"
    t = Transcript(home / ".claude" / "projects" / "-w-demo" / "s-9.jsonl", "s-9", tmp_path / "w")
    t.turn("hello", "hi")
    (event,) = claude_code_events(home)
    assert event["session_id"] == "s-9" and event["transcript_path"] == str(t.path)
    assert event["cwd"] == str(tmp_path / "w")
    assert list(claude_code_events(tmp_path / "nobody")) == []


def test_a_capture_never_wipes_the_session_roots_it_cannot_read_whole(
    tmp_path: Path, rt: Runtime
) -> None:
    """The record of which project each session folder maps to (`capture/projects.json`)
    grows with every new folder; past what a read takes whole, a capture in a new folder
    used to read it as empty and write it again holding that one folder, so every other
    folder's project (`app-<hash>` for a second folder named app) was forgotten and could
    merge into another's. Now the record is kept as it is."""
    from imprint.hooklib.compose import _ROOTS_MAX_BYTES, SESSION_ROOTS

    record = rt.data_dir / SESSION_ROOTS
    record.parent.mkdir(parents=True, exist_ok=True)
    roots = {"/elsewhere/app": "app-0123abcd"}
    filler = 0
    while len(json.dumps(roots)) <= _ROOTS_MAX_BYTES:
        roots.update(
            {f"/work/many/{filler + i:08d}/app": f"app-{filler + i:08d}" for i in range(4096)}
        )
        filler += 4096
    before = json.dumps(roots, indent=1, sort_keys=True)
    record.write_text(before, encoding="utf-8")
    t = _transcript(tmp_path)
    t.turn("hello", "Hello.")
    assert capture_event(Writes(rt), rt.data_dir, t.event()) == 1
    assert record.read_text(encoding="utf-8") == before
