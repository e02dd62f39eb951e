"""The Claude Code plugin folder (plugin/): its manifest, MCP server and hooks agree with
what `imprint hooks install` writes, and run Imprint through plugin/bin/imprint, which finds
the `imprint` to run or fails open and says so (`imprint hooks status`)."""

from __future__ import annotations

import calendar
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from imprint.hooklib.events import NATIVE_EVENTS, canonical_event
from imprint.hooklib.settings import HookSettings
from imprint.hooklib.state import record_run
from imprint.hooks.status import status_lines
from imprint.reads.hook_report import client_hooks, hooks_lines

PLUGIN = Path(__file__).resolve().parents[1] / "plugin"
RUNNER = PLUGIN / "bin" / "imprint"
ROOT = "${CLAUDE_PLUGIN_ROOT}/bin/imprint"


def test_the_plugin_runs_imprints_server_and_each_default_hook() -> None:
    """plugin.json names the plugin, the local marketplace lists it, .mcp.json runs
    `<plugin>/bin/imprint serve`, and hooks/hooks.json runs `<plugin>/bin/imprint hook EVENT
    --client claude-code` for the events install adds by default, each within a client
    timeout past its budget."""
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    market = json.loads((PLUGIN / ".claude-plugin" / "marketplace.json").read_text())
    assert manifest["name"] == "imprint"
    assert [p["name"] for p in market["plugins"]] == ["imprint"]
    server = json.loads((PLUGIN / ".mcp.json").read_text())["mcpServers"]["imprint"]
    assert (server["command"], server["args"]) == (ROOT, ["serve"])
    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
    wanted = {n for e, n in NATIVE_EVENTS["claude-code"].items() if e != "prompt-submit"}
    assert set(hooks) == wanted
    for native, groups in hooks.items():
        (handler,) = groups[0]["hooks"]
        words = shlex.split(handler["command"])
        event = canonical_event(native)
        assert event is not None
        assert words == [ROOT, "hook", event, "--client", "claude-code"]
        assert handler["timeout"] * 1000 > HookSettings().budget_ms(event)
    assert os.access(RUNNER, os.X_OK)


def _run(args: list[str], home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """plugin/bin/imprint with a PATH that has no imprint on it."""
    environ = {"HOME": str(home), "PATH": "/usr/bin:/bin", **env}
    return subprocess.run(
        [str(RUNNER), *args],
        input='{"session_id": "s1"}',
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=environ,
    )


def test_the_runner_runs_the_imprint_it_finds_and_fails_open_when_none(tmp_path: Path) -> None:
    """IMPRINT_BIN (or ~/.local/bin/imprint) is run with the arguments; with none, a hook
    prints nothing, exits 0 and logs one line (folder 0700, file 0600), `serve` exits 127
    naming the fix, and `hooks status` says how often and what to set until a Claude Code
    hook runs again."""
    home, data = tmp_path / "home", tmp_path / "data"
    home.mkdir()
    fake = tmp_path / "fake-imprint"
    fake.write_text(f"#!{sys.executable}\nimport sys\nprint('ran', *sys.argv[1:])\n")
    fake.chmod(0o755)
    ran = _run(["hook", "stop", "--client", "claude-code"], home, IMPRINT_BIN=str(fake))
    assert (ran.returncode, ran.stdout) == (0, "ran hook stop --client claude-code\n")
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "imprint").symlink_to(fake)
    assert _run(["--version"], home).stdout == "ran --version\n"
    (home / ".local" / "bin" / "imprint").unlink()

    for event in ("session-start", "stop"):
        missed = _run(["hook", event, "--client", "claude-code"], home, IMPRINT_DATA_DIR=str(data))
        assert (missed.returncode, missed.stdout, missed.stderr) == (0, "", "")
    log = data / "hooks" / "plugin-missing.log"
    assert [line.split(" ", 1)[1] for line in log.read_text().splitlines()] == [
        "hook session-start --client claude-code",
        "hook stop --client claude-code",
    ]
    assert (data.stat().st_mode & 0o777, log.stat().st_mode & 0o777) == (0o700, 0o600)
    serve = _run(["serve"], home)
    assert serve.returncode == 127 and "set IMPRINT_BIN" in serve.stderr

    shown = hooks_lines(client_hooks(data))  # `imprint status`, and the dashboard's rows
    assert shown[:2] == [
        "hooks:",
        "  claude-code: last capture never (0 captures, 0 turns); 0 hook runs, 0 failed",
    ]
    assert shown[2].startswith("    the plugin's hooks found no `imprint` to run 2 times, ")
    lines = status_lines(data, home=home, project=tmp_path)
    (said,) = [line for line in lines if line.startswith("  plugin: ")]
    assert said.startswith("  plugin: its hooks found no `imprint` to run 2 times, the last at ")
    assert "IMPRINT_BIN=" in said
    # A miss in the second a hook last ran (its stamp is whole seconds, the run's is not)
    # is still shown: the plugin's test in the real Claude Code ran both within a second.
    stamp = log.read_text().splitlines()[-1].split(" ", 1)[0]
    at = calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"))
    record_run(data, "claude-code", "stop", elapsed_ms=5, now=at + 0.9)
    lines = status_lines(data, home=home, project=tmp_path)
    assert any(line.startswith("  plugin: its hooks found no `imprint` to run ") for line in lines)
    # A hook that ran after the last miss (the log's times are whole seconds: moved back).
    log.write_text(log.read_text().replace(log.read_text()[:4], "2020"))
    record_run(data, "claude-code", "session-start", elapsed_ms=20)
    lines = status_lines(data, home=home, project=tmp_path)
    assert not any(line.startswith("  plugin: ") for line in lines)
    assert not any("plugin" in line for line in hooks_lines(client_hooks(data)))
