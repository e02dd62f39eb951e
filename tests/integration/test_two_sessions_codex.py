"""Two sessions of the real Codex CLI (`codex exec`) in one project folder, against a
scripted Responses API on 127.0.0.1, with the hooks `imprint hooks install --client codex`
wrote: the first session's rollout is captured (a decision, a failed command and its fix, a
secret in the prompt), and the second session's first request to the model carries the
briefing of it, as the developer message Codex makes of a SessionStart hook's context. The
secret is nowhere in the data dir afterwards: no file, no log."""

from __future__ import annotations

import json
import os
import secrets
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import daemon_pid, wait_gone
from tests.integration.node_clients import client, client_env
from tests.integration.responses_model import function_call, message, scripted_responses
from tests.integration.test_two_sessions import DECISION, FAILING, FIX, _imprint, _listing, _ok

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def _secret() -> str:
    """A fresh fake key in OpenAI's project key format (never a committed literal)."""
    body = secrets.token_urlsafe(120).replace("-", "x").replace("_", "y")[:156]
    return f"sk-proj-{body}"


def _codex(codex: str, prompt: str, cwd: Path, env: dict[str, str]) -> None:
    """One headless session (no sandbox or approvals: the loopback model's commands run
    in a scratch folder; hooks run without Codex's interactive trust review, which a
    headless run cannot give)."""
    _ok(
        [codex, "exec", "--dangerously-bypass-approvals-and-sandbox",
         "--dangerously-bypass-hook-trust", "--skip-git-repo-check", prompt],
        cwd, env,
    )  # fmt: skip


def _wait_captured(data_dir: Path, session_id: str) -> dict[str, Any]:
    """The session's capture state once its Stop hook's capture is written: the daemon
    captures after the hook has exited, so this polls the state file the capture writes
    (Codex appends its own bookkeeping to the rollout after Stop, so the offset need not
    reach the file's end)."""
    path = data_dir / "capture" / "sessions" / f"{session_id}.json"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if path.exists():
            state: dict[str, Any] = json.loads(path.read_text("utf-8"))
            if state["notes"]["turns"] >= 1:
                return state
        time.sleep(0.1)  # another process's background work; nothing here to wait on
    raise AssertionError(f"session {session_id} was not captured: {_listing(data_dir)}")


@dataclass(frozen=True)
class CodexSessions:
    data_dir: Path
    secret: str
    state: dict[str, Any]  # the first session's capture state
    briefed: str  # the second session's first request to the model, as JSON


def _rollout(codex_home: Path) -> Path:
    (found,) = sorted((codex_home / "sessions").glob("*/*/*/rollout-*.jsonl"))
    return found


@pytest.fixture(scope="module")
def codex_sessions(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CodexSessions]:
    """Session 1 (Codex, hooks from `imprint hooks install --client codex`): the model
    states a decision, `exec_command` fails and the next call fixes it, and the prompt holds
    an OpenAI key; its Stop hook hands it to capture. Session 2 in the same folder asks one
    question. The daemon the hooks started is stopped at the end."""
    codex = client("@openai/codex")
    tmp_path = tmp_path_factory.mktemp("codex")
    data_dir, home, project = tmp_path / "data", tmp_path / "home", tmp_path / "birdwatch"
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True)
    project.mkdir()
    secret = _secret()
    try:
        with scripted_responses([]) as model:
            (codex_home / "config.toml").write_text(
                'model_provider = "loopback"\nmodel = "gpt-5-codex"\n'
                "check_for_update_on_startup = false\n"
                "[model_providers.loopback]\n"
                f'name = "loopback"\nbase_url = "{model.url}"\nwire_api = "responses"\n'
                'env_key = "LOOPBACK_API_KEY"\n'
            )
            env = client_env(
                home,
                CODEX_HOME=str(codex_home),
                LOOPBACK_API_KEY="dummy-key-for-a-loopback-model",
                IMPRINT_DATA_DIR=str(data_dir),
                IMPRINT_SERVER_IDLE_EXIT_SEC="120",
                # How fast the hooks answer is benchmark/hooks.py's to measure; here a loaded
                # machine must not turn a slow first briefing into a missing one.
                IMPRINT_HOOKS_TIMEOUT_MS_SESSION_START="20000",
            )
            installed = _imprint(["hooks", "install", "--client", "codex"], project, env)
            assert "capture is enabled for codex" in installed, installed
            model.turns = [
                [
                    message(f"{DECISION} It keeps queries simple."),
                    function_call("exec_command", {"cmd": FAILING}),
                ],
                [function_call("exec_command", {"cmd": FIX})],
                [message("The fix was to write birds.toml first. Done.")],
            ]
            prompt = f"Set up the sightings store. My key is OPENAI_API_KEY={secret} if needed."
            _codex(codex, prompt, project, env)
            rollout = _rollout(codex_home)
            meta = json.loads(rollout.read_text("utf-8").splitlines()[0])["payload"]
            state = _wait_captured(data_dir, meta["id"])
            model.requests.clear()
            model.turns = [[message("Noted.")]]
            _codex(codex, "What did we do last time?", project, env)
            briefed = json.dumps(model.agent_requests()[0])
        yield CodexSessions(data_dir, secret, state, briefed)
    finally:
        pid = daemon_pid(data_dir)
        if pid is not None:
            os.kill(pid, signal.SIGTERM)
            assert wait_gone(pid), "the daemon the hooks started did not stop on SIGTERM"


def test_codex_first_session_is_captured_with_its_decision_and_fixed_error(
    codex_sessions: CodexSessions,
) -> None:
    """The capture of the first rollout holds the decision, and the failed `cat` with the
    command that got past it."""
    notes = codex_sessions.state["notes"]
    assert codex_sessions.state["client"] == "codex"
    assert any(DECISION in d for d in notes["decisions"]), notes
    assert any(FAILING in e and "birds.toml" in e.split("->")[-1] for e in notes["errors"]), notes


def test_codex_second_session_is_told_the_decision_and_the_error_with_its_fix(
    codex_sessions: CodexSessions,
) -> None:
    """The second session's first request to the model holds the SessionStart briefing:
    the first session's decision and the failed command with the fix that followed."""
    briefed = codex_sessions.briefed
    assert "Imprint memory for project birdwatch" in briefed, briefed[:3000]
    assert "Last sessions:" in briefed
    assert DECISION.removesuffix(".") in briefed
    assert "birds.toml: No such file or directory (exit code 1) -> then printf" in briefed


def test_codex_secret_is_in_no_file_of_the_data_dir(codex_sessions: CodexSessions) -> None:
    """The key typed in the first session is in no file of the data dir (stores, capture
    queue and state, hook state, logs), and not in what the second session was told; the
    capture did store that prompt, with the key redacted."""
    data_dir, secret = codex_sessions.data_dir, codex_sessions.secret
    assert secret not in codex_sessions.briefed
    assert "[redacted:" in json.dumps(codex_sessions.state["notes"]["asked"])
    files = [p for p in sorted(data_dir.rglob("*")) if p.is_file()]
    assert any(p.suffix == ".jsonl" and p.parent.name == "logs" for p in files), files
    found = [str(p.relative_to(data_dir)) for p in files if secret.encode() in p.read_bytes()]
    assert found == [], f"the secret is stored in {found}"
