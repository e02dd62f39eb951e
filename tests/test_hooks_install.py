"""`imprint hooks install|uninstall|status`: each client's files, idempotent, every other
setting kept, a backup of each file changed."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from imprint.errors import InputError
from imprint.hooklib.settings import HookSettings
from imprint.hooklib.state import record_run
from imprint.hooks.install import install_hooks, uninstall_hooks
from imprint.hooks.status import status_lines

FOREIGN = {"type": "command", "command": "echo someone-else"}


def _install(client: str, home: Path, project: Path, **settings: object) -> list[str]:
    return install_hooks(
        client,
        "user",
        HookSettings(**settings),
        home=home,
        project=project,  # type: ignore[arg-type]
    )


def _ours(entries: list[dict[str, object]]) -> list[str]:
    commands = []
    for entry in entries:
        inner = entry.get("hooks", [entry])
        commands += [str(h["command"]) for h in inner if "hook" in str(h.get("command"))]  # type: ignore[union-attr,index,attr-defined]
    return commands


def test_claude_code_install_is_idempotent_and_keeps_other_settings(tmp_path: Path) -> None:
    """Claude Code: the hooks go into ~/.claude/settings.json next to the user's own (a
    foreign SessionStart hook and permissions stay), the MCP entry into ~/.claude.json
    beside another server; a second install changes nothing and makes no second backup."""
    home, project = tmp_path / "home", tmp_path / "proj"
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(
        json.dumps(
            {
                "permissions": {"allow": ["Bash(ls)"]},
                "hooks": {"SessionStart": [{"matcher": "startup", "hooks": [FOREIGN]}]},
            }
        )
    )
    (home / ".claude.json").write_text(json.dumps({"mcpServers": {"other": {"command": "x"}}}))
    first = _install("claude-code", home, project)
    data = json.loads(settings.read_text())
    assert data["permissions"] == {"allow": ["Bash(ls)"]}
    assert data["hooks"]["SessionStart"][0] == {"matcher": "startup", "hooks": [FOREIGN]}
    for native in ("SessionStart", "Stop", "PreCompact", "SessionEnd"):
        assert len(_ours(data["hooks"][native])) == 1, native
    assert "UserPromptSubmit" not in data["hooks"]  # hooks.prompt_submit is off
    started = _ours(data["hooks"]["SessionStart"])[0]
    assert started.endswith("launcher.py session-start --client claude-code")
    servers = json.loads((home / ".claude.json").read_text())["mcpServers"]
    assert servers["other"] == {"command": "x"}
    assert servers["imprint"]["args"] == ["serve"]
    assert any("capture is enabled for claude-code" in line for line in first)
    backups = sorted(p.name for p in settings.parent.glob("settings.json.imprint-*.bak"))
    assert len(backups) == 1
    before = settings.read_text()
    second = _install("claude-code", home, project)
    assert settings.read_text() == before
    assert [line for line in second if line.startswith(("wrote", "unchanged"))] == [
        f"unchanged: {settings}",
        f"unchanged: {home / '.claude.json'}",
    ]
    assert sorted(p.name for p in settings.parent.glob("settings.json.imprint-*.bak")) == backups


def test_prompt_submit_is_installed_only_when_turned_on(tmp_path: Path) -> None:
    """With hooks.prompt_submit on, install adds the UserPromptSubmit hook, once."""
    home = tmp_path / "home"
    _install("claude-code", home, tmp_path, prompt_submit=True)
    _install("claude-code", home, tmp_path, prompt_submit=True)
    hooks = json.loads((home / ".claude" / "settings.json").read_text())["hooks"]
    assert len(_ours(hooks["UserPromptSubmit"])) == 1


def test_codex_install_enables_hooks_in_config_toml_keeping_its_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Codex: hooks.json, `[features] hooks = true` set inside the existing features table
    (in the place of the `codex_hooks` line Codex deprecated; no `codex` on PATH to ask) and
    an `[mcp_servers.imprint]` table added, the comments and other tables kept."""
    home = tmp_path / "home"
    config = home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    original = (
        '# my settings\nmodel = "o4"\n\n[features]\nother = true\ncodex_hooks = false\n\n'
        '[mcp_servers.other]\ncommand = "x"\n'
    )
    config.write_text(original)
    monkeypatch.setenv("PATH", str(tmp_path))  # no codex
    _install("codex", home, tmp_path)
    text = config.read_text()
    assert text.startswith("# my settings\n")
    data = tomllib.loads(text)
    assert data["features"] == {"other": True, "hooks": True}
    assert data["model"] == "o4" and data["mcp_servers"]["other"] == {"command": "x"}
    assert data["mcp_servers"]["imprint"]["args"] == ["serve"]
    hooks = json.loads((home / ".codex" / "hooks.json").read_text())["hooks"]
    assert sorted(hooks) == ["SessionStart", "Stop"]
    _install("codex", home, tmp_path)
    assert config.read_text() == text
    assert len(list(config.parent.glob("config.toml.imprint-*.bak"))) == 1


def test_gemini_and_cursor_get_their_own_formats(tmp_path: Path) -> None:
    """Gemini CLI: named handlers with millisecond timeouts in settings.json, beside its
    mcpServers; Cursor: `version: 1` and flat command entries, its MCP entry in mcp.json."""
    home = tmp_path / "home"
    _install("gemini", home, tmp_path)
    gemini = json.loads((home / ".gemini" / "settings.json").read_text())
    handler = gemini["hooks"]["SessionStart"][0]["hooks"][0]
    assert handler["name"] == "imprint-session-start" and handler["timeout"] >= 2000
    assert sorted(gemini["hooks"]) == ["AfterAgent", "PreCompress", "SessionEnd", "SessionStart"]
    assert gemini["mcpServers"]["imprint"]["args"] == ["serve"]
    _install("cursor", home, tmp_path)
    cursor = json.loads((home / ".cursor" / "hooks.json").read_text())
    assert cursor["version"] == 1
    assert sorted(cursor["hooks"]) == ["preCompact", "sessionEnd", "sessionStart", "stop"]
    entry = cursor["hooks"]["sessionStart"][0]
    assert entry["command"].endswith("launcher.py session-start --client cursor")
    assert "imprint" in json.loads((home / ".cursor" / "mcp.json").read_text())["mcpServers"]


def test_project_scope_writes_under_the_project(tmp_path: Path) -> None:
    """--scope project: Claude Code's .claude/settings.json and .mcp.json in the project."""
    home, project = tmp_path / "home", tmp_path / "proj"
    install_hooks("claude-code", "project", HookSettings(), home=home, project=project)
    assert (project / ".claude" / "settings.json").is_file()
    assert "imprint" in json.loads((project / ".mcp.json").read_text())["mcpServers"]
    assert not home.exists()


def test_a_file_that_does_not_parse_is_never_written_over(tmp_path: Path) -> None:
    """A settings file that is not JSON: an error naming it, the file as it was."""
    settings = tmp_path / "home" / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text("{not json")
    with pytest.raises(InputError, match=r"settings\.json: not valid JSON"):
        _install("claude-code", tmp_path / "home", tmp_path)
    assert settings.read_text() == "{not json"


def test_uninstall_takes_out_only_imprints_hooks(tmp_path: Path) -> None:
    """Uninstall leaves the foreign hook and the MCP entry, and drops every hook of ours."""
    home = tmp_path / "home"
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [FOREIGN]}]}}))
    _install("claude-code", home, tmp_path)
    uninstall_hooks("claude-code", "user", home=home, project=tmp_path)
    assert json.loads(settings.read_text()) == {"hooks": {"Stop": [{"hooks": [FOREIGN]}]}}
    assert "imprint" in json.loads((home / ".claude.json").read_text())["mcpServers"]


def test_status_names_what_is_installed_and_the_last_failure(tmp_path: Path) -> None:
    """hooks status: installed events per client and scope, then each event's runs and
    its last failure with the reason."""
    home, data = tmp_path / "home", tmp_path / "data"
    _install("claude-code", home, tmp_path)
    record_run(data, "claude-code", "session-start", elapsed_ms=12)
    record_run(data, "claude-code", "session-start", error="daemon: it exited before listening")
    lines = status_lines(data, home=home, project=tmp_path)
    assert lines[0] == "claude-code: user: session-start, stop, pre-compact, session-end"
    assert lines[1].startswith("  session-start: 2 runs, 1 failed; last run ")
    assert lines[1].endswith("daemon: it exited before listening")
    assert "codex: not installed" in lines


def test_an_earlier_installs_imprint_hook_command_is_replaced_by_the_launcher(
    tmp_path: Path,
) -> None:
    """A settings file with the `imprint hook ...` command of an earlier install: installing
    again leaves one hook of ours per event, the launcher's, and uninstall takes it out."""
    home = tmp_path / "home"
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    old = {"type": "command", "command": "/x/bin/imprint hook stop --client claude-code"}
    settings.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [old]}, {"hooks": [FOREIGN]}]}}))
    _install("claude-code", home, tmp_path)
    stop = json.loads(settings.read_text())["hooks"]["Stop"]
    assert [h["command"] for e in stop for h in e["hooks"]][:1] == ["echo someone-else"]
    ours = _ours(stop)
    assert len(ours) == 1 and ours[0].endswith("launcher.py stop --client claude-code")
    uninstall_hooks("claude-code", "user", home=home, project=tmp_path)
    assert json.loads(settings.read_text())["hooks"]["Stop"] == [{"hooks": [FOREIGN]}]


def test_the_installed_command_runs_the_hook_without_site_packages(tmp_path: Path) -> None:
    """The command install writes (python -I -S and the launcher) runs a stop hook: exit 0,
    nothing printed, its event in the capture queue and its run counted, having imported
    nothing but the standard library and imprint (the daemon's start included). Then a full
    disk (the failpoint `disk.full`: every new write fails with ENOSPC): exit 0, nothing
    printed, nothing queued, and the failure still counted (in place) with its reason."""
    import os
    import shlex
    import subprocess
    import sys

    from imprint.hooklib.state import read_state
    from imprint.hooks.install import hook_command, hook_launcher

    data = tmp_path / "data"
    words = shlex.split(hook_command(hook_launcher(), "stop", "claude-code"))
    event = json.dumps({"session_id": "s1", "transcript_path": "/t.jsonl", "cwd": "/"}).encode()
    env = {**os.environ, "IMPRINT_DATA_DIR": str(data), "IMPRINT_SERVER_IDLE_EXIT_SEC": "1"}
    done = subprocess.run(
        [*words[:3], "-X", "importtime", *words[3:]],
        input=event,
        capture_output=True,
        timeout=120,
        env=env,
    )
    assert (done.returncode, done.stdout) == (0, b"")
    assert read_state(data)["claude-code"]["stop"]["runs"] == 1
    # The whole hand-off, the daemon's start included: the standard library and imprint.
    names = [
        line.split("|")[-1].strip()
        for line in done.stderr.decode().splitlines()
        if line.startswith("import time:") and "imported package" not in line
    ]
    assert "imprint.hooklib.queue" in names
    stdlib = {*sys.stdlib_module_names, "org"}  # `copy` probes for Jython's org.python.core
    assert {n.split(".")[0] for n in names} - stdlib == {"imprint"}

    full = {**env, "IMPRINT_FAIL": "disk.full"}
    done = subprocess.run(words, input=event, capture_output=True, timeout=120, env=full)
    assert (done.returncode, done.stdout) == (0, b"")
    row = read_state(data)["claude-code"]["stop"]
    assert (row["runs"], row["failures"]) == (2, 1)
    assert "capture queue not written" in row["last_error"]
    assert "No space left on device" in row["last_error"]
    queued = (data / "capture" / "queue.jsonl").read_text().splitlines()
    assert [json.loads(line)["session_id"] for line in queued] == ["s1"]
    lines = status_lines(data, home=tmp_path / "home", project=tmp_path)
    shown = next(line for line in lines if line.startswith("  stop: "))
    assert "2 runs, 1 failed" in shown and "No space left on device" in shown
