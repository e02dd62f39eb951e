"""Two sessions of a real coding agent in one project folder, against a scripted model on
127.0.0.1: the hooks `imprint hooks install` wrote capture the first session (a decision, a
failed command and its fix, a memory stored through Imprint's MCP server, a secret in the
prompt), and the second session's first request to the model carries the briefing of it.
The secret is nowhere in the data dir afterwards: no file, no log."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.model_server import scripted_model, text, tool_use
from tests.integration.node_clients import client, client_env

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

DECISION = "I decided to keep the sightings in SQLite instead of CSV files."
FAILING = "cat birds.toml"
FIX = "printf 'region = \"north\"\\n' > birds.toml && cat birds.toml"
PREFERENCE = "Bird names in the birdwatch project are written in lower case."


def _secret() -> str:
    """A fresh fake key in Anthropic's API key format (never a committed literal)."""
    body = secrets.token_urlsafe(70).replace("-", "x").replace("_", "y")[:93]
    return f"sk-ant-api03-{body}AA"


def _imprint(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "imprint.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def _claude(claude: str, prompt: str, cwd: Path, env: dict[str, str]) -> dict[str, Any]:
    """One headless session; its result object."""
    proc = subprocess.run(
        [claude, "-p", prompt, "--output-format", "json"]
        + ["--allowedTools", "Bash", "ToolSearch", "mcp__imprint__store"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
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


def _listing(data_dir: Path) -> str:
    state = data_dir / "hooks" / "state.json"
    log = data_dir / "logs" / "imprint.jsonl"
    return "\n".join(
        p.read_text("utf-8")[-4000:] if p.exists() else f"{p}: none" for p in (state, log)
    )


def _tool_results(body: dict[str, Any]) -> list[str]:
    return [
        json.dumps(block.get("content"))
        for message in body["messages"]
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


def test_claude_code_second_session_is_briefed_on_the_first_and_the_secret_is_kept_out(
    data_dir: Path, tmp_path: Path
) -> None:
    """Session 1 (Claude Code, hooks from `imprint hooks install --scope project`): the model
    states a decision, a Bash call fails and the next one fixes it, a preference is stored
    through Imprint's MCP `store`, and the prompt holds an Anthropic key; its end hooks hand
    it to capture. Session 2 in the same folder: its first request to the model holds the
    briefing with the decision, the error and its fix, and the preference. The key is in no
    file of the data dir (stores, capture state, logs)."""
    claude = client("@anthropic-ai/claude-code")
    home, project = tmp_path / "home", tmp_path / "birdwatch"
    home.mkdir()
    project.mkdir()
    secret = _secret()
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
            ["hooks", "install", "--client", "claude-code", "--scope", "project"], project, env
        )
        assert "capture is enabled for claude-code" in installed, installed
        model.turns = [
            [text(f"{DECISION} It keeps queries simple."), tool_use("Bash", {"command": FAILING})],
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
        first = _claude(
            claude,
            f"Set up the sightings store. My key is ANTHROPIC_API_KEY={secret} if you need it.",
            project,
            env,
        )
        results = _tool_results(model.agent_requests()[-1])
        assert any("No such file or directory" in r for r in results), results
        assert any("stored " in r for r in results), results
        state = _wait_captured(data_dir, first["session_id"])
        assert state["notes"]["decisions"] and state["notes"]["errors"], state

        model.requests.clear()
        model.turns = [[text("Noted.")]]
        _claude(claude, "What did we do last time?", project, env)

    briefed = json.dumps(model.agent_requests()[0])
    assert "Imprint memory for project birdwatch" in briefed
    assert DECISION.removesuffix(".") in briefed
    assert "No such file or directory" in briefed
    assert "birds.toml" in briefed
    assert PREFERENCE.removesuffix(".") in briefed
    assert secret not in briefed
    found = [
        str(p.relative_to(data_dir))
        for p in sorted(data_dir.rglob("*"))
        if p.is_file() and secret.encode() in p.read_bytes()
    ]
    assert found == [], f"the secret is stored in {found}"
    assert any(p.is_file() for p in (data_dir / "logs").iterdir())
