"""Capture of Codex and Gemini CLI transcripts, on files the real clients wrote.

`tests/fixtures/transcripts/` holds one session of each, written by the pinned clients
(Codex 0.171.0 `codex exec`, Gemini CLI 0.61.0 `gemini -p`) against a scripted model on
127.0.0.1, with a SessionStart hook that added `MARKER-BRIEFING-KESTREL` as context: the
model states a decision, `cat birds.toml` fails, the next command writes the file. The
prompt held `OPENAI_API_KEY=@@SECRET@@`; each test plants a freshly made key there (Codex's
instructions, longer than 1,500 characters, were cut for size; nothing else was changed)."""

from __future__ import annotations

import json
import os
import secrets
import shutil
from pathlib import Path

import pytest

from imprint.actors.lifecycle import Runtime
from imprint.capture.backfill import backfill_events
from imprint.capture.formats import read_new
from imprint.capture.session import capture_event, load_state
from imprint.capture.transcript import TOOL_OUTPUT_CHARS
from imprint.errors import InputError
from imprint.store.records import SESSION_SUMMARY_KIND
from imprint.writes import Writes
from tests.support.capture_support import session_records

FIXTURES = Path(__file__).parent / "fixtures" / "transcripts"
FILES = {"codex": "codex-rollout.jsonl", "gemini": "gemini-session.jsonl"}
DECISION = "I decided to keep the sightings in SQLite instead of CSV files."
MARKER = "MARKER-BRIEFING-KESTREL"


def _secret() -> str:
    """A fresh fake OpenAI project key (never a committed literal)."""
    body = secrets.token_urlsafe(120).replace("-", "x").replace("_", "y")[:156]
    return f"sk-proj-{body}"


def _planted(tmp_path: Path, client: str, secret: str = "") -> Path:
    text = (FIXTURES / FILES[client]).read_text("utf-8")
    path = tmp_path / FILES[client]
    path.write_text(text.replace("@@SECRET@@", secret or _secret()), "utf-8")
    return path


def _lines(path: Path) -> list[str]:
    return path.read_text("utf-8").splitlines(keepends=True)


@pytest.mark.parametrize("client", ["codex", "gemini"])
def test_a_real_transcript_reads_as_its_prompt_reply_and_tool_calls(
    tmp_path: Path, client: str
) -> None:
    """The one turn of each client's session: the prompt as typed (no hook context, no
    environment or session context the client added), the decision, both shell calls with
    their commands, the failed one marked failed with its message, the fix not."""
    path = _planted(tmp_path, client, secret="KEY")
    (turn,) = read_new(path, 0, client).turns
    assert turn.prompt == "Set up the sightings store. My key is OPENAI_API_KEY=KEY if needed."
    assert DECISION in turn.texts
    failing, fix = turn.tools
    assert "cat birds.toml" in json.dumps(failing.input)
    assert failing.is_error and "No such file or directory" in failing.output
    assert "printf" in json.dumps(fix.input) and not fix.is_error
    assert "region = 1" in fix.output
    everything = json.dumps(
        [turn.__dict__ for turn in read_new(path, 0, client).turns], default=str
    )
    assert MARKER not in everything
    assert "environment_context" not in everything and "session_context" not in everything


@pytest.mark.parametrize("client", ["codex", "gemini"])
def test_a_read_goes_on_from_its_offset_and_a_partly_written_line_waits(
    tmp_path: Path, client: str
) -> None:
    """Cut at the first line holding the closing "Done." (half written), a read takes
    what is complete; the next read, from the offset it returned, takes the rest once the
    line is whole, and a third finds nothing."""
    whole = _lines(_planted(tmp_path, client))
    last = min(i for i, line in enumerate(whole) if '"Done."' in line)
    path = tmp_path / "growing.jsonl"
    path.write_text("".join(whole[:last]) + whole[last][:30], "utf-8")
    first = read_new(path, 0, client)
    assert first.end == len("".join(whole[:last]).encode())
    assert not any("Done." in t for turn in first.turns for t in turn.texts)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(whole[last][30:] + "".join(whole[last + 1 :]))
    second = read_new(path, first.end, client)
    assert any("Done." in t for turn in second.turns for t in turn.texts)
    assert second.end == path.stat().st_size
    assert read_new(path, second.end, client).turns == []


def test_a_long_codex_tool_output_is_trimmed(tmp_path: Path) -> None:
    """A command's output of 20,000 characters is stored trimmed to TOOL_OUTPUT_CHARS and
    says how much was left out."""
    lines = _lines(_planted(tmp_path, "codex"))
    at = next(i for i, line in enumerate(lines) if '"function_call_output"' in line)
    obj = json.loads(lines[at])
    obj["payload"]["output"] = obj["payload"]["output"].replace(
        "cat: birds.toml", "y" * 20_000 + " cat: birds.toml"
    )
    lines[at] = json.dumps(obj) + "\n"
    path = tmp_path / "long.jsonl"
    path.write_text("".join(lines), "utf-8")
    (turn,) = read_new(path, 0, "codex").turns
    assert len(turn.tools[0].output) < TOOL_OUTPUT_CHARS + 60
    assert "more characters]" in turn.tools[0].output


def test_a_rewound_gemini_message_is_not_captured(tmp_path: Path) -> None:
    """Gemini CLI's `$rewindTo` undoes the messages from the named one on: a read that
    sees it leaves them out."""
    path = _planted(tmp_path, "gemini")
    reply = next(json.loads(line)["id"] for line in _lines(path) if '"type":"gemini"' in line)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"$rewindTo": reply}) + "\n")
    (turn,) = read_new(path, 0, "gemini").turns
    assert turn.texts == [] and turn.tools == []


@pytest.mark.parametrize("client", ["codex", "gemini"])
def test_capturing_a_real_transcript_stores_it_redacted_with_its_summary(
    tmp_path: Path, rt: Runtime, client: str
) -> None:
    """A capture event as the client's Stop hook sends it stores the turn as
    `session:<id>` and a summary naming the decision and the failed command with the one
    that followed; the planted key is in neither, nor in the session's state file; a
    second capture of the same transcript writes nothing more."""
    secret = _secret()
    path = _planted(tmp_path, client, secret)
    event = {"client": client, "session_id": f"{client}-s1", "transcript_path": str(path),
             "cwd": str(tmp_path / "birdwatch"), "hook_event_name": "Stop"}  # fmt: skip
    writes = Writes(rt)
    assert capture_event(writes, rt.data_dir, event) == 1
    records = session_records(rt, "birdwatch", f"session:{client}-s1")
    summary = next(r for r in records if r.kind == SESSION_SUMMARY_KIND)
    assert DECISION.removesuffix(".") in summary.content
    assert "cat birds.toml" in summary.content and "-> then printf" in summary.content
    stored = " ".join(r.content for r in records)
    assert "[redacted:" in stored and secret[:24] not in stored
    state_file = rt.data_dir / "capture" / "sessions" / f"{client}-s1.json"
    assert secret[:24] not in state_file.read_text("utf-8")
    state = load_state(rt.data_dir, f"{client}-s1")
    assert state is not None and state.client == client and state.read_to == path.stat().st_size
    assert capture_event(writes, rt.data_dir, event) == 0


def test_a_gemini_turn_captured_midway_is_written_again_in_place(
    tmp_path: Path, rt: Runtime
) -> None:
    """Gemini CLI appends a message again each time it changes. A capture made while the
    reply had no tool calls yet, then one after the whole turn: the turn's records are
    written over (one record per piece, holding both commands once), and it counts as one
    turn."""
    whole = _lines(_planted(tmp_path, "gemini"))
    cut = next(i for i, line in enumerate(whole) if '"toolCalls"' in line)
    path = tmp_path / "growing.jsonl"
    path.write_text("".join(whole[:cut]), "utf-8")
    event = {"client": "gemini", "session_id": "g-mid", "transcript_path": str(path),
             "cwd": str(tmp_path / "birdwatch"), "hook_event_name": "AfterAgent"}  # fmt: skip
    writes = Writes(rt)
    assert capture_event(writes, rt.data_dir, event) == 1
    path.write_text("".join(whole), "utf-8")
    assert capture_event(writes, rt.data_dir, event) == 1
    assert capture_event(writes, rt.data_dir, event) == 0
    turns = [r for r in session_records(rt, "birdwatch", "session:g-mid") if r.kind == "session"]
    assert len(turns) == 1, [r.content for r in turns]
    assert turns[0].content.count("run_shell_command: cat birds.toml") == 1
    assert "run_shell_command: printf" in turns[0].content
    state = load_state(rt.data_dir, "g-mid")
    assert state is not None and state.notes.turns == 1
    assert state.notes.errors == [e for e in state.notes.errors if "-> then printf" in e]


def test_a_cursor_event_is_counted_and_captures_nothing(tmp_path: Path, rt: Runtime) -> None:
    """Cursor's hooks name no transcript Imprint reads: its capture event writes nothing
    (no state, no records) and is no error."""
    event = {"client": "cursor", "conversation_id": "c-1", "hook_event_name": "stop"}
    assert capture_event(Writes(rt), rt.data_dir, event) == 0
    assert not (rt.data_dir / "capture" / "sessions").exists() or not any(
        (rt.data_dir / "capture" / "sessions").iterdir()
    )


def test_backfill_finds_the_codex_and_gemini_transcripts_they_keep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Codex's rollouts under `$CODEX_HOME/sessions/Y/M/D/` and Gemini CLI's chat files
    under `~/.gemini/tmp/<project>/chats/` each become one event with the session id and
    folder their files name; an unknown client is refused naming the ones allowed."""
    home = tmp_path / "home"
    rollout = home / "codex" / "sessions" / "2026" / "12" / "02" / "rollout-x.jsonl"
    rollout.parent.mkdir(parents=True)
    shutil.copy(FIXTURES / FILES["codex"], rollout)
    chats = home / ".gemini" / "tmp" / "proj" / "chats"
    chats.mkdir(parents=True)
    shutil.copy(FIXTURES / FILES["gemini"], chats / "session-x.jsonl")
    (chats.parent / ".project_root").write_text("/work/proj\n")
    monkeypatch.setitem(os.environ, "CODEX_HOME", str(home / "codex"))
    (codex,) = backfill_events("codex", home)
    meta = json.loads(rollout.read_text("utf-8").splitlines()[0])["payload"]
    assert codex["session_id"] == meta["id"] and codex["cwd"] == meta["cwd"]
    assert codex["transcript_path"] == str(rollout) and codex["client"] == "codex"
    (gemini,) = backfill_events("gemini", home)
    first = json.loads((chats / "session-x.jsonl").read_text("utf-8").splitlines()[0])
    assert gemini["session_id"] == first["sessionId"] and gemini["cwd"] == "/work/proj"
    with pytest.raises(InputError, match="claude-code, codex, gemini"):
        backfill_events("cursor", home)
