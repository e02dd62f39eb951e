"""`imprint hook EVENT`: never in the client's way (exit 0, nothing on stdout when it
fails or runs out of time), every failure counted for `hooks status`, the context in the
form the client reads, capture handed off."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from imprint.config import HooksConfig
from imprint.hooklib.events import canonical_event, context_output
from imprint.hooklib.settings import HookSettings, hook_settings
from imprint.hooklib.state import read_state
from imprint.hooks.entry import hook_args, run_hook
from tests.support.process_support import hooks_status, wait_exit

IMPRINT = str(Path(sys.executable).with_name("imprint"))


def _hook(
    data: Path, *args: str, stdin: bytes = b"{}", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [IMPRINT, "hook", *args],
        input=stdin,
        capture_output=True,
        timeout=120,
        env={**os.environ, "IMPRINT_DATA_DIR": str(data), **(env or {})},
    )


def _row(data: Path, client: str, event: str) -> dict[str, Any]:
    return read_state(data)[client][event]


def test_garbage_on_stdin_exits_0_prints_nothing_and_is_counted(tmp_path: Path) -> None:
    """Not JSON on stdin: exit 0, empty stdout, one failure naming why."""
    data = tmp_path / "data"
    done = _hook(data, "session-start", "--client", "claude-code", stdin=b"\x00garbage")
    assert (done.returncode, done.stdout) == (0, b"")
    row = _row(data, "claude-code", "session-start")
    assert row["runs"] == 1 and row["failures"] == 1
    assert "not JSON" in row["last_error"]
    assert oct((data / "hooks" / "state.json").stat().st_mode & 0o777) == "0o600"


def test_a_daemon_that_cannot_start_is_named_by_hooks_status(tmp_path: Path) -> None:
    """A config.toml the daemon refuses: the session-start hook exits 0 with nothing printed
    (no store yet: nothing to brief) and starts a daemon in the background without waiting
    for it; a stop hook queues its capture. Once that daemon has exited, `imprint hooks
    status` says none runs, that one capture waits, and its log's last line names the bad
    setting. (A session start no longer waits for a daemon to come up, so the hook's own
    row has no failure: the daemon's is shown here instead.)"""
    data = tmp_path / "data"
    data.mkdir()
    (data / "config.toml").write_text("[store]\nmin_free_mb = 'lots'\n")
    event = json.dumps({"cwd": str(tmp_path), "session_id": "s1"}).encode()
    done = _hook(data, "SessionStart", "--client", "claude-code", stdin=event)
    assert (done.returncode, done.stdout) == (0, b"")
    assert "failures" not in _row(data, "claude-code", "session-start")
    stop = json.dumps({"cwd": str(tmp_path), "session_id": "s1", "transcript_path": "/t"})
    assert _hook(data, "Stop", "--client", "claude-code", stdin=stop.encode()).returncode == 0
    spawned = json.loads((data / "run" / "spawned.json").read_text())
    wait_exit(int(spawned["pid"]))
    status = hooks_status(data)
    assert "daemon: not running" in status, status
    assert "capture queue: 1 events waiting" in status
    assert "min_free_mb" in status.split("its log's last line")[1]


def test_a_hook_past_its_deadline_exits_0_with_nothing_printed(tmp_path: Path) -> None:
    """hooks.timeout_ms.session_start = 50 and a client that never closes stdin: the
    watchdog ends the process (exit 0, empty stdout) and counts the timeout."""
    data = tmp_path / "data"
    with subprocess.Popen(
        [IMPRINT, "hook", "session-start", "--client", "codex"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={
            **os.environ,
            "IMPRINT_DATA_DIR": str(data),
            "IMPRINT_HOOKS_TIMEOUT_MS_SESSION_START": "50",
        },
    ) as proc:
        assert proc.stdout is not None and proc.stdin is not None
        try:
            assert proc.wait(timeout=60) == 0
            assert proc.stdout.read() == b""
        finally:
            proc.kill()
    row = _row(data, "codex", "session-start")
    assert row["failures"] == 1 and "no answer within 50 ms" in row["last_error"]


def test_an_unknown_event_is_counted_not_shown(tmp_path: Path) -> None:
    """An event name no client uses: exit 0, nothing printed, counted under `unknown`."""
    data = tmp_path / "data"
    done = _hook(data, "PostToolUse", "--client", "claude-code")
    assert (done.returncode, done.stdout) == (0, b"")
    assert "unknown event 'PostToolUse'" in _row(data, "claude-code", "unknown")["last_error"]


@pytest.fixture
def fake_capture(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict[str, Any]]]:
    """An `imprint.hooks.capture` whose hand_off records what it is given."""
    got: list[dict[str, Any]] = []
    module = types.ModuleType("imprint.hooks.capture")
    module.hand_off = got.append  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "imprint.hooks.capture", module)
    yield got


def test_capture_events_are_handed_off_with_client_and_event(
    fake_capture: list[dict[str, Any]], tmp_path: Path, data_dir: Path
) -> None:
    """Stop, PreCompact and SessionEnd (any client's name) go to capture.hand_off with the
    client's own fields and Imprint's client and event names; each run is counted ok."""
    event = {"session_id": "s1", "transcript_path": "/t.jsonl", "cwd": str(tmp_path)}
    for name in ("Stop", "preCompact", "SessionEnd"):
        assert run_hook(name, "claude-code", io.BytesIO(json.dumps(event).encode())) == 0
    assert [e["imprint_event"] for e in fake_capture] == ["stop", "pre-compact", "session-end"]
    assert all(e["imprint_client"] == "claude-code" for e in fake_capture)
    assert fake_capture[0]["transcript_path"] == "/t.jsonl"
    assert _row(data_dir, "claude-code", "stop").get("failures", 0) == 0


def test_without_capture_a_capture_event_is_a_counted_failure(
    monkeypatch: pytest.MonkeyPatch, data_dir: Path
) -> None:
    """No capture module: the stop hook fails open, and the failure says why."""
    monkeypatch.setitem(sys.modules, "imprint.hooks.capture", None)
    assert run_hook("stop", "gemini", io.BytesIO(b'{"cwd": "/"}')) == 0
    assert "capture is not available" in _row(data_dir, "gemini", "stop")["last_error"]


def test_an_excluded_folder_is_neither_briefed_nor_captured(
    fake_capture: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    data_dir: Path,
) -> None:
    """hooks.exclude naming the session's folder (by path, or by a folder's name): the
    capture is not handed off, and the run counts as done, not failed."""
    secret = tmp_path / "secret-project"
    (secret / "src").mkdir(parents=True)
    for entry in (str(secret), "secret-project"):
        monkeypatch.setenv("IMPRINT_HOOKS_EXCLUDE", entry)
        event = json.dumps({"cwd": str(secret / "src")}).encode()
        assert run_hook("stop", "claude-code", io.BytesIO(event)) == 0
    assert fake_capture == []
    row = _row(data_dir, "claude-code", "stop")
    assert row["runs"] == 2 and "failures" not in row


def test_prompt_submit_is_off_by_default_and_asks_nothing(
    monkeypatch: pytest.MonkeyPatch, data_dir: Path
) -> None:
    """hooks.prompt_submit off (the default): nothing printed and no daemon asked."""
    asked: list[object] = []
    import imprint.daemon.asks as asks

    monkeypatch.setattr(asks, "ask_hook", lambda *a: asked.append(a) or "context")
    assert run_hook("UserPromptSubmit", "claude-code", io.BytesIO(b'{"prompt": "hi"}')) == 0
    assert asked == []
    monkeypatch.setenv("IMPRINT_HOOKS_PROMPT_SUBMIT", "true")
    assert run_hook("UserPromptSubmit", "claude-code", io.BytesIO(b'{"prompt": "hi"}')) == 0
    assert len(asked) == 1 and asked[0][1]["prompt"] == "hi"  # type: ignore[index]


def test_hook_settings_match_the_schema_and_read_file_and_environment(tmp_path: Path) -> None:
    """The hook's own reader has the schema's defaults, takes [hooks] from config.toml and
    IMPRINT_HOOKS_* over it, and falls back to a default for a value it cannot use."""
    schema = HooksConfig()
    assert hook_settings(tmp_path, {}) == HookSettings(
        context_chars=schema.context_chars,
        prompt_submit=schema.prompt_submit,
        timeout_ms=schema.timeout_ms.model_dump(),
        exclude=tuple(schema.exclude),
    )
    (tmp_path / "config.toml").write_text(
        "[hooks]\ncontext_chars = 900\nprompt_submit = true\nexclude = ['a', '~/b']\n"
        "[hooks.timeout_ms]\nsession_start = 700\ncapture = 'soon'\n"
    )
    read = hook_settings(tmp_path, {"IMPRINT_HOOKS_TIMEOUT_MS_PROMPT_SUBMIT": "250"})
    assert (read.context_chars, read.prompt_submit, read.exclude) == (900, True, ("a", "~/b"))
    assert dict(read.timeout_ms) == {"session_start": 700, "prompt_submit": 250, "capture": 300}
    assert read.budget_ms("stop") == 300 and read.budget_ms("session-start") == 700


def test_every_clients_event_names_and_context_forms() -> None:
    """Each client's names map to Imprint's events, and context comes out in the form each
    client reads: hookSpecificOutput for Claude Code, Codex and Gemini CLI, Cursor's
    additional_context, plain text when no client is named; nothing for capture events."""
    assert [canonical_event(n) for n in ("SessionStart", "BeforeAgent", "beforeSubmitPrompt")] == [
        "session-start",
        "prompt-submit",
        "prompt-submit",
    ]
    assert [canonical_event(n) for n in ("AfterAgent", "PreCompress", "sessionEnd", "x")] == [
        "stop",
        "pre-compact",
        "session-end",
        None,
    ]
    claude = json.loads(context_output("claude-code", "session-start", "brief"))
    assert claude == {
        "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "brief"}
    }
    gemini = json.loads(context_output("gemini", "prompt-submit", "brief"))
    assert gemini["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"
    assert json.loads(context_output("cursor", "session-start", "b")) == {"additional_context": "b"}
    assert context_output("cursor", "prompt-submit", "b") == ""
    assert context_output("", "session-start", "b") == "b\n"
    assert context_output("claude-code", "stop", "b") == ""
    assert context_output("claude-code", "session-start", "") == ""
    assert hook_args(["stop", "--client", "codex"]) == ("stop", "codex")
    assert hook_args(["--help"]) is None and hook_args(["stop", "extra"]) is None


def test_the_hook_process_imports_nothing_heavy() -> None:
    """What a hook process loads (the console script's router, the launcher, the entry, the
    capture hand-off and its failpoints, the briefing's layout, the daemon's client half)
    brings in no structlog, pydantic, typer, MCP, rich, store or model library, nor
    filelock, sqlite3, inspect or tomllib: a hook starts at every session, within its
    budget."""
    heavy = (
        "structlog", "pydantic", "typer", "mcp", "rich", "chromadb", "numpy", "pykka",
        "onnxruntime", "llama_cpp", "detect_secrets",
        # and what was taken off the path to keep a hand-off within 100 ms: the daemon's
        # start lock, SQLite (imprint.errors), dataclasses' inspect, TOML without [hooks]
        "filelock", "asyncio", "sqlite3", "inspect", "dataclasses", "tomllib",
    )  # fmt: skip
    script = (
        "import sys, imprint.launch, imprint.hooks.launcher, imprint.hooks.entry, "
        "imprint.hooks.capture, imprint.hooklib.queue, imprint._faults, imprint.hooklib.compose, "
        "imprint.daemon.client; "
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({heavy!r})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
