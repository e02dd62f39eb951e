"""The Claude Code plugin (plugin/) in the real Claude Code, loaded with `--plugin-dir`,
against a scripted model on 127.0.0.1, with no `imprint` on the client's PATH (as when
Claude Code starts from a desktop launcher): with IMPRINT_BIN set, its hooks run Imprint
(each counted) and its MCP server connects; with none to find, the session goes on
undisturbed and `imprint hooks status` says what was missed and what to set."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support.model_server import scripted_model, text
from tests.support.node_clients import client, client_env, run_client
from tests.support.two_sessions import stop_daemon
from tests.support.two_sessions_clients import DUMMY_KEY

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

PLUGIN = Path(__file__).resolve().parents[2] / "plugin"
IMPRINT = str(Path(sys.executable).with_name("imprint"))


def _env(home: Path, data: Path, url: str, **extra: str) -> dict[str, str]:
    env = client_env(
        home,
        IMPRINT_DATA_DIR=str(data),
        IMPRINT_SERVER_IDLE_EXIT_SEC="60",
        IMPRINT_HOOKS_TIMEOUT_MS_SESSION_START="20000",
        ANTHROPIC_BASE_URL=url,
        **{"ANTHROPIC_API_KEY": DUMMY_KEY},  # the loopback model reads none
        **extra,
    )
    # The locked Node's clients, then the system: no folder that holds an `imprint`.
    env["PATH"] = ":".join(p for p in env["PATH"].split(":") if not (Path(p) / "imprint").exists())
    return env


def test_the_plugin_runs_imprint_by_imprint_bin_and_says_when_it_finds_none(
    tmp_path: Path,
) -> None:
    claude = client("@anthropic-ai/claude-code")
    home, project, data = tmp_path / "home", tmp_path / "birdwatch", tmp_path / "data"
    home.mkdir()
    project.mkdir()
    session = [claude, "-p", "hi", "--output-format", "json", "--plugin-dir", str(PLUGIN)]
    try:
        with scripted_model([[text("Noted.")], [text("Noted.")]]) as model:
            env = _env(home, data, model.url, IMPRINT_BIN=IMPRINT)
            done = run_client(session, project, env)
            assert done.returncode == 0 and json.loads(done.stdout)["is_error"] is False
            state = json.loads((data / "hooks" / "state.json").read_text())["clients"]
            ran = state["claude-code"]
            assert (
                ran["session-start"]["runs"] == 1 and ran["session-start"].get("failures", 0) == 0
            )
            assert ran["session-end"]["runs"] == 1
            listed = run_client([claude, "--plugin-dir", str(PLUGIN), "mcp", "list"], project, env)
            assert "plugin:imprint:imprint:" in listed.stdout and "Connected" in listed.stdout

            bare = _env(home, data, model.url)
            missed = run_client(session, project, bare)
            assert missed.returncode == 0 and json.loads(missed.stdout)["result"] == "Noted."
        lines = (data / "hooks" / "plugin-missing.log").read_text().splitlines()
        assert [line.split(" ", 1)[1] for line in lines][:1] == [
            "hook session-start --client claude-code"
        ]
        status = run_client([IMPRINT, "hooks", "status"], project, bare)
        assert "  plugin: its hooks found no `imprint` to run " in status.stdout, status.stdout
        assert f"IMPRINT_BIN={IMPRINT}" in status.stdout
    finally:
        stop_daemon(data)
