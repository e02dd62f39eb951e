"""Two sessions of the real Codex CLI (`codex exec`) and of the real Gemini CLI (`gemini -p`)
in one project folder each, against a scripted model API on 127.0.0.1 (Codex: a model
provider whose `base_url` is a scripted Responses API; Gemini CLI: GOOGLE_GEMINI_BASE_URL at
a scripted Gemini API), with the hooks `imprint hooks install --client NAME` wrote: the
first session's transcript is captured (a decision, a failed shell command and its fix, a
secret in the prompt), and the second session's first request to the model carries the
briefing of it (Codex makes a SessionStart hook's context a developer message; Gemini CLI
puts it in the prompt inside `<hook_context>`). The secret is nowhere in the data dir
afterwards: no file, no log."""

from __future__ import annotations

import html
import json
import secrets
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.gemini_model import call, scripted_gemini, words
from tests.support.model_server import Block, ScriptedModel
from tests.support.node_clients import client, client_env
from tests.support.responses_model import function_call, message, scripted_responses
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
from tests.support.two_sessions_clients import DUMMY_KEY

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


FINAL = "The fix was to write birds.toml first. Done."  # session 1's last reply


def _secret() -> str:
    """A fresh fake key in OpenAI's project key format (never a committed literal)."""
    body = secrets.token_urlsafe(120).replace("-", "x").replace("_", "y")[:156]
    return f"sk-proj-{body}"


@dataclass(frozen=True)
class _Client:
    package: str
    model: type[AbstractContextManager[ScriptedModel]] | Any
    first: list[list[Block]]  # session 1's scripted turns
    second: list[list[Block]]
    error_line: str  # how the summary names the failed command (never its output) and what followed


CLIENTS = {
    "codex": _Client(
        "@openai/codex",
        scripted_responses,
        [
            [
                message(f"{DECISION} It keeps queries simple."),
                function_call("exec_command", {"cmd": FAILING}),
            ],
            [function_call("exec_command", {"cmd": FIX})],
            [message(FINAL)],
        ],
        [[message("Noted.")]],
        "cat birds.toml failed -> then printf",
    ),
    "gemini": _Client(
        "@google/gemini-cli",
        scripted_gemini,
        [
            [
                words(f"{DECISION} It keeps queries simple."),
                call("run_shell_command", {"command": FAILING}),
            ],
            [call("run_shell_command", {"command": FIX})],
            [words(FINAL)],
        ],
        [[words("Noted.")]],
        "cat birds.toml failed -> then printf",
    ),
}


def _configure(name: str, home: Path, project: Path, url: str) -> dict[str, str]:
    """The client's own settings in a scratch home (its model at `url`), and its
    environment."""
    if name == "codex":
        codex_home = home / ".codex"
        codex_home.mkdir(parents=True)
        (codex_home / "config.toml").write_text(
            'model_provider = "loopback"\nmodel = "gpt-5-codex"\n'
            "check_for_update_on_startup = false\n"
            "[model_providers.loopback]\n"
            f'name = "loopback"\nbase_url = "{url}"\nwire_api = "responses"\n'
            'env_key = "LOOPBACK_API_KEY"\n'
        )
        return {"CODEX_HOME": str(codex_home), "LOOPBACK_API_KEY": DUMMY_KEY}
    gemini_dir = home / ".gemini"
    gemini_dir.mkdir(parents=True)
    trusted = {str(project.resolve()): "TRUST_FOLDER"}
    (gemini_dir / "trustedFolders.json").write_text(json.dumps(trusted))
    settings = {
        "privacy": {"usageStatisticsEnabled": False},
        "security": {"auth": {"selectedType": "gemini-api-key"}},
    }
    (gemini_dir / "settings.json").write_text(json.dumps(settings))
    return {"GOOGLE_GEMINI_BASE_URL": url, "GEMINI_API_KEY": DUMMY_KEY}


def _session(name: str, exe: str, prompt: str, cwd: Path, env: dict[str, str]) -> None:
    """One headless session. Codex: no sandbox or approvals (the loopback model's commands
    run in a scratch folder); its hooks run because `hooks install --trust` trusted them
    (a headless run cannot review one, and skips it); Gemini CLI: tools approved (`--yolo`)."""
    if name == "codex":
        args = [exe, "exec", "--dangerously-bypass-approvals-and-sandbox",
                "--skip-git-repo-check", prompt]  # fmt: skip
    else:
        args = [exe, "-p", prompt, "--output-format", "json", "--yolo"]
    _ok(args, cwd, env)


def _transcript(name: str, home: Path) -> Path:
    pattern = "sessions/*/*/*/rollout-*.jsonl" if name == "codex" else "tmp/*/chats/session-*.jsonl"
    (found,) = sorted((home / f".{name}").glob(pattern))
    return found


def _session_id(name: str, transcript: Path) -> str:
    first = json.loads(transcript.read_text("utf-8").splitlines()[0])
    return str(first["payload"]["id"] if name == "codex" else first["sessionId"])


def _reply_end(name: str, transcript: Path) -> int:
    """The byte offset after the line that records session 1's last reply (Codex: its
    `response_item`; Gemini CLI: the first copy of its message), 0 while there is none."""
    marker = '"output_text"' if name == "codex" else '"type":"gemini"'
    at = 0
    for line in transcript.read_bytes().splitlines(keepends=True):
        at += len(line)
        text = line.decode("utf-8", "replace")
        if FINAL in text and marker in text:
            return at
    return 0


def _wait_captured(name: str, data_dir: Path, transcript: Path) -> dict[str, Any]:
    """The session's capture state once a capture has read past the line of its last
    reply: the daemon captures after the hook has exited (and may capture a session midway,
    when the client fires its end-of-turn hook more than once), so this polls the state file
    the capture writes. (A client may append its own bookkeeping after the hook, so the
    capture need not reach the file's end.)"""
    path = data_dir / "capture" / "sessions" / f"{_session_id(name, transcript)}.json"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        end = _reply_end(name, transcript)
        if path.exists() and end:
            state: dict[str, Any] = json.loads(path.read_text("utf-8"))
            if state["read_to"] >= end:
                return state
        time.sleep(0.1)  # another process's background work; nothing here to wait on
    raise AssertionError(f"{transcript} was not captured to its end: {_listing(data_dir)}")


@dataclass(frozen=True)
class TwoSessions:
    name: str
    data_dir: Path
    secret: str
    state: dict[str, Any]  # the first session's capture state
    briefed: str  # the second session's first request to the model, as JSON


@pytest.fixture(scope="module", params=sorted(CLIENTS))
def sessions(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TwoSessions]:
    """Session 1 (hooks from `imprint hooks install --client NAME`): the model states a
    decision, a shell call fails and the next one fixes it, and the prompt holds an OpenAI
    key; its end-of-turn hook hands it to capture. Session 2 in the same folder asks one
    question. The daemon the hooks started is stopped at the end."""
    name: str = request.param
    spec = CLIENTS[name]
    exe = client(spec.package)
    tmp_path = tmp_path_factory.mktemp(name)
    data_dir, home, project = tmp_path / "data", tmp_path / "home", tmp_path / "birdwatch"
    project.mkdir()
    secret = _secret()
    try:
        with spec.model([]) as model:
            env = client_env(
                home,
                **_configure(name, home, project, model.url),
                IMPRINT_DATA_DIR=str(data_dir),
                IMPRINT_SERVER_IDLE_EXIT_SEC="120",
                # How fast the hooks answer is benchmark/hooks.py's to measure; here a loaded
                # machine must not turn a slow first briefing into a missing one.
                IMPRINT_HOOKS_TIMEOUT_MS_SESSION_START="20000",
            )
            trust = ["--trust"] if name == "codex" else []
            installed = _imprint(["hooks", "install", "--client", name, *trust], project, env)
            assert f"capture is enabled for {name}" in installed, installed
            if name == "codex":  # the real Codex, asked after the trust was written
                assert "the session-start hook: trusted by Codex" in installed, installed
                assert "the stop hook: trusted by Codex" in installed, installed
            model.turns = spec.first
            prompt = f"Set up the sightings store. My key is OPENAI_API_KEY={secret} if needed."
            _session(name, exe, prompt, project, env)
            state = _wait_captured(name, data_dir, _transcript(name, home))
            model.requests.clear()
            model.turns = spec.second
            _session(name, exe, "What did we do last time?", project, env)
            briefed = json.dumps(model.agent_requests()[0])
        yield TwoSessions(name, data_dir, secret, state, briefed)
    finally:
        stop_daemon(data_dir)


def test_first_session_is_captured_with_its_decision_and_fixed_error(
    sessions: TwoSessions,
) -> None:
    """The capture of the first session's transcript, read as the client's format, holds
    the decision, and the failed `cat` with the command that got past it."""
    notes = sessions.state["notes"]
    assert sessions.state["client"] == sessions.name
    assert any(DECISION in d for d in notes["decisions"]), notes
    assert any(FAILING in e and "birds.toml" in e.split("->")[-1] for e in notes["errors"]), notes


def test_second_session_is_told_the_decision_and_the_error_with_its_fix(
    sessions: TwoSessions,
) -> None:
    """The second session's first request to the model holds the SessionStart briefing:
    the first session's decision and the failed command with the fix that followed."""
    briefed = sessions.briefed
    assert "Imprint memory for project birdwatch" in briefed, briefed[:3000]
    assert "Last sessions:" in briefed
    assert DECISION.removesuffix(".") in briefed
    # Gemini CLI escapes a hook context's angle brackets (`->` arrives as `-&gt;`).
    assert CLIENTS[sessions.name].error_line in html.unescape(briefed), briefed[:6000]


def test_secret_is_in_no_file_of_the_data_dir(sessions: TwoSessions) -> None:
    """The key typed in the first session is in no file of the data dir (stores, capture
    queue and state, hook state, logs), and not in what the second session was told; the
    capture did store that prompt, with the key redacted."""
    notes = sessions.state["notes"]
    assert_secret_nowhere(sessions.data_dir, sessions.secret, sessions.briefed, notes)


def test_the_clients_server_used_the_data_dir_its_hooks_did(sessions: TwoSessions) -> None:
    """With IMPRINT_DATA_DIR set to a folder of its own, the client's MCP server (which
    Codex starts with none of its environment) used that data dir too: no default data dir
    appeared under the client's home, and one daemon served both (issue 45: Codex's tools
    answered from ~/.local/share/imprint, and a second daemon started there)."""
    default = sessions.data_dir.parent / "home" / ".local" / "share" / "imprint"
    assert not default.exists(), sorted(p.name for p in default.iterdir())
