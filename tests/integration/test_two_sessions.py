"""Two sessions of a real coding agent in one project folder, against a scripted model on
127.0.0.1: the hooks `imprint hooks install` wrote capture the first session (a decision, a
failed command and its fix, a memory stored through Imprint's MCP server, a secret in the
prompt), and the second session's first request to the model carries the briefing of it.
The secret is nowhere in the data dir afterwards: no file, no log."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.model_server import scripted_model, text, tool_use
from tests.support.node_clients import client, client_env
from tests.support.two_sessions import (
    DECISION,
    FAILING,
    FIX,
    _imprint,
    _listing,
    _ok,
    assert_secret_nowhere,
    stop_daemon,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

ALLOWED = ("Bash", "ToolSearch", "mcp__imprint__store")
PREFERENCE = "Bird names in the birdwatch project are written in lower case."


def _secret() -> str:
    """A fresh fake key in Anthropic's API key format (never a committed literal)."""
    body = secrets.token_urlsafe(70).replace("-", "x").replace("_", "y")[:93]
    return f"sk-ant-api03-{body}AA"


def _claude(claude: str, prompt: str, cwd: Path, env: dict[str, str]) -> dict[str, Any]:
    """One headless session; its result object."""
    out = _ok(
        [claude, "-p", prompt, "--output-format", "json", "--allowedTools", *ALLOWED], cwd, env
    )
    result: dict[str, Any] = json.loads(out)
    assert result["is_error"] is False, result
    return result


def _wait_captured(data_dir: Path, session_id: str) -> dict[str, Any]:
    """The session's capture state once it has read its transcript to the end: the daemon
    captures after the hook has exited, so this polls the state file the capture writes."""
    path = data_dir / "capture" / "sessions" / f"{session_id}.json"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if path.exists():
            state: dict[str, Any] = json.loads(path.read_text("utf-8"))
            if state["offset"] == Path(state["transcript"]).stat().st_size:
                return state
        time.sleep(0.1)  # another process's background work; nothing here to wait on
    raise AssertionError(f"session {session_id} was not captured: {_listing(data_dir)}")


def _tool_results(body: dict[str, Any]) -> list[str]:
    return [
        json.dumps(block.get("content"))
        for message in body["messages"]
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


@dataclass(frozen=True)
class TwoSessions:
    data_dir: Path
    secret: str
    state: dict[str, Any]  # the first session's capture state
    first_results: list[str]  # the tool results of the first session's last request
    briefed: str  # the second session's first request to the model, as JSON


@pytest.fixture(scope="module")
def claude_sessions(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwoSessions]:
    """Session 1 (Claude Code, hooks from `imprint hooks install --scope project`): the model
    states a decision, a Bash call fails and the next one fixes it, a preference is stored
    through Imprint's MCP `store`, and the prompt holds an Anthropic key; its end hooks hand
    it to capture. Session 2 in the same folder asks one question. The daemon the hooks
    started is stopped at the end."""
    claude = client("@anthropic-ai/claude-code")
    tmp_path = tmp_path_factory.mktemp("claude")
    data_dir, home, project = tmp_path / "data", tmp_path / "home", tmp_path / "birdwatch"
    home.mkdir()
    project.mkdir()
    secret = _secret()
    try:
        with scripted_model([]) as model:
            env = client_env(
                home,
                IMPRINT_DATA_DIR=str(data_dir),
                IMPRINT_SERVER_IDLE_EXIT_SEC="120",
                # How fast the hooks answer is benchmark/hooks.py's to measure; here a loaded
                # machine must not turn a slow first briefing into a missing one.
                IMPRINT_HOOKS_TIMEOUT_MS_SESSION_START="20000",
                ANTHROPIC_BASE_URL=model.url,
                ANTHROPIC_API_KEY="sk-ant-dummy-key-for-a-loopback-model",
            )
            installed = _imprint(
                ["hooks", "install", "--client", "claude-code", "--scope", "project"],
                project,
                env,
            )
            assert "capture is enabled for claude-code" in installed, installed
            model.turns = [
                [
                    text(f"{DECISION} It keeps queries simple."),
                    tool_use("Bash", {"command": FAILING}),
                ],
                [tool_use("Bash", {"command": FIX})],
                [tool_use("ToolSearch", {"query": "select:mcp__imprint__store", "max_results": 1})],
                [
                    tool_use(
                        "mcp__imprint__store",
                        {"content": PREFERENCE, "project": "birdwatch", "type": "preference"},
                    )
                ],
                [text("The fix was to write birds.toml first. Done.")],
            ]
            prompt = f"Set up the sightings store. My key is ANTHROPIC_API_KEY={secret} if needed."
            first = _claude(claude, prompt, project, env)
            results = _tool_results(model.agent_requests()[-1])
            state = _wait_captured(data_dir, first["session_id"])
            model.requests.clear()
            model.turns = [[text("Noted.")]]
            _claude(claude, "What did we do last time?", project, env)
            briefed = json.dumps(model.agent_requests()[0])
        yield TwoSessions(data_dir, secret, state, results, briefed)
    finally:
        stop_daemon(data_dir)


def test_claude_code_first_session_runs_its_tools_and_is_captured(
    claude_sessions: TwoSessions,
) -> None:
    """In the first session the failing Bash call failed, Imprint's MCP `store` answered,
    and the capture's notes hold the decision and the error with the call that got past it."""
    results, notes = claude_sessions.first_results, claude_sessions.state["notes"]
    assert any("No such file or directory" in r for r in results), results
    assert any("stored " in r for r in results), results
    assert any(DECISION in d for d in notes["decisions"]), notes
    assert any(FAILING in e and "birds.toml" in e.split("->")[-1] for e in notes["errors"]), notes


def test_claude_code_second_session_request_carries_the_briefing(
    claude_sessions: TwoSessions,
) -> None:
    """The second session's first request to the model holds the SessionStart briefing for
    the project: the preference stored in the first session, and its session summary."""
    briefed = claude_sessions.briefed
    assert "SessionStart hook additional context: Imprint memory for project birdwatch" in briefed
    assert PREFERENCE.removesuffix(".") in briefed
    assert "Last sessions:" in briefed, briefed


def test_claude_code_second_session_is_told_the_decision_and_the_error_with_its_fix(
    claude_sessions: TwoSessions,
) -> None:
    """The briefing in the second session's first request names the first session's
    decision and the failed command with the fix that followed it (the command, never its
    output: a script's output is anyone's text)."""
    briefed = claude_sessions.briefed
    assert DECISION.removesuffix(".") in briefed
    assert "cat birds.toml failed -> then printf" in briefed
    assert "No such file or directory" not in briefed


def test_claude_code_secret_is_in_no_file_of_the_data_dir(claude_sessions: TwoSessions) -> None:
    """The key typed in the first session is in no file of the data dir (stores, capture
    queue and state, hook state, logs), and not in what the second session was told; the
    capture did store that turn, with the key redacted."""
    notes = claude_sessions.state["notes"]
    assert "[redacted:anthropic-key]" in json.dumps(notes["asked"])
    assert_secret_nowhere(
        claude_sessions.data_dir, claude_sessions.secret, claude_sessions.briefed, notes
    )
