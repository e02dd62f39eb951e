"""What real sessions in Claude Code, Codex and Gemini CLI tripped over in their first
minute (issue 45): usage errors, disconnects, the data dir each client entry names, status
in words, and the smaller things."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.client_fit import _HEAVY, _RECORD_MODULES
from tests.support.daemon import StartDaemon


def _imprint(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`imprint ARGS...` through the real entry point (the console script's `main`)."""
    env = {**os.environ, "IMPRINT_DATA_DIR": str(tmp_path / "data")}
    return subprocess.run(
        [sys.executable, "-c", "from imprint.launch import main; main()", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )


# -- 5: a typo gets click's short usage error, exit 2 ------------------------------------------


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("nosuchcommand",), "No such command 'nosuchcommand'."),
        (("search",), "Missing argument 'query'."),
        (("search", "x", "--limit", "many"), "Invalid value for '--limit'"),
        (("hooks", "nosuch"), "No such command 'nosuch'."),
    ],
    ids=["unknown-command", "missing-query", "bad-option-value", "unknown-subcommand"],
)
def test_a_usage_error_is_clicks_short_message_and_exit_2(
    tmp_path: Path, args: tuple[str, ...], said: str
) -> None:
    """`imprint nosuchcommand`, `imprint search` without its query, a bad option value and
    an unknown subcommand: click's usage message on stderr, at most 5 lines, no traceback,
    exit 2 (before: a 34-37 line traceback and exit 1, since typer's vendored click
    exception is not `click.ClickException`)."""
    done = _imprint(tmp_path, *args)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) <= 5, done.stderr
    assert "Traceback" not in done.stderr
    assert said in done.stderr, done.stderr
    assert lines[0].startswith("Usage: imprint "), done.stderr


def test_help_is_unchanged_by_the_usage_error_handling(tmp_path: Path) -> None:
    """`imprint --help` and a command's `--help` still print their help and exit 0."""
    for args in (("--help",), ("search", "--help"), ("hooks", "install", "--help")):
        done = _imprint(tmp_path, *args)
        assert done.returncode == 0, done.stderr
        assert f"Usage: imprint {' '.join(args[:-1])}".rstrip() in done.stdout, done.stdout
        assert "Traceback" not in done.stderr


# -- 1: every client entry names the data dir it was installed for -----------------------------


def _entry(client: str, home: Path) -> dict[str, object]:
    """The `imprint` MCP server entry `hooks install` wrote for `client` (user scope)."""
    import json
    import tomllib

    if client == "codex":
        return dict(
            tomllib.loads((home / ".codex" / "config.toml").read_text())["mcp_servers"]["imprint"]
        )
    path = {
        "claude-code": home / ".claude.json",
        "gemini": home / ".gemini" / "settings.json",
        "cursor": home / ".cursor" / "mcp.json",
    }[client]
    return dict(json.loads(path.read_text())["mcpServers"]["imprint"])


def _hook_commands(client: str, home: Path) -> list[str]:
    from imprint.hooks.install import our_commands

    found = our_commands(client, "user", home=home, project=home)
    return [command for commands in found.values() for command in commands]


@pytest.mark.parametrize("client", ["claude-code", "codex", "gemini", "cursor"])
def test_each_client_entry_and_hook_names_the_data_dir_it_was_installed_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, client: str
) -> None:
    """With IMPRINT_DATA_DIR set, `hooks install` writes it into the client's MCP entry
    (`env`, which Codex needs: it passes no environment to an MCP server) and into every
    hook command (`--data-dir`), so tools, hooks and CLI meet in one data dir whatever
    environment the client starts them in (before: Codex's tools read ~/.local/share/imprint
    while its hooks briefed from the user's data dir, and a second daemon started)."""
    from imprint.hooklib.settings import HookSettings
    from imprint.hooks.install import install_hooks

    chosen = tmp_path / "elsewhere"
    monkeypatch.setenv("IMPRINT_DATA_DIR", str(chosen))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "home" / ".codex"))
    monkeypatch.setattr("imprint.hooks.install.codex_executable", lambda: None)
    home = tmp_path / "home"
    install_hooks(client, "user", HookSettings(), home=home, project=tmp_path)
    entry = _entry(client, home)
    assert entry["env"] == {"IMPRINT_DATA_DIR": str(chosen)}, entry
    assert entry["args"] == ["serve"]
    commands = _hook_commands(client, home)
    assert commands and all(f"-X imprint_data_dir={chosen} " in c for c in commands), commands
    again = install_hooks(client, "user", HookSettings(), home=home, project=tmp_path)
    assert not [line for line in again if line.startswith("wrote:")], again


@pytest.mark.parametrize("client", ["claude-code", "codex", "gemini"])
def test_an_entry_without_the_data_dir_gets_it_and_keeps_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, client: str
) -> None:
    """An `imprint` entry an earlier install wrote (no env) gets the data dir on the next
    install; its other keys and env variables stay; a second install writes nothing."""
    import json

    from imprint.hooklib.settings import HookSettings
    from imprint.hooks.install import install_hooks

    chosen = tmp_path / "elsewhere"
    home = tmp_path / "home"
    monkeypatch.setenv("IMPRINT_DATA_DIR", str(chosen))
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    monkeypatch.setattr("imprint.hooks.install.codex_executable", lambda: None)
    if client == "codex":
        (home / ".codex").mkdir(parents=True)
        (home / ".codex" / "config.toml").write_text(
            '# mine\n[mcp_servers.imprint]\ncommand = "/x/imprint"\nargs = ["serve"]\n'
            'env = { OTHER = "1" }\n\n[other]\nkey = 1\n'
        )
    else:
        path = home / (".claude.json" if client == "claude-code" else ".gemini/settings.json")
        path.parent.mkdir(parents=True, exist_ok=True)
        old = {"command": "/x/imprint", "args": ["serve"], "env": {"OTHER": "1"}, "trust": True}
        path.write_text(json.dumps({"mcpServers": {"imprint": old}}))
    install_hooks(client, "user", HookSettings(), home=home, project=tmp_path)
    entry = _entry(client, home)
    assert entry["env"] == {"OTHER": "1", "IMPRINT_DATA_DIR": str(chosen)}, entry
    assert entry["command"] == "/x/imprint"
    if client == "codex":
        text = (home / ".codex" / "config.toml").read_text()
        assert text.startswith("# mine\n") and "[other]\nkey = 1" in text
    else:
        assert entry["trust"] is True
    again = install_hooks(client, "user", HookSettings(), home=home, project=tmp_path)
    assert not [line for line in again if line.startswith("wrote:")], again


def test_a_hook_runs_against_the_data_dir_its_command_names(tmp_path: Path) -> None:
    """The hook command install wrote, run with another IMPRINT_DATA_DIR in its environment
    (a client started from elsewhere): its run is counted in the data dir the command names."""
    import json
    import shlex

    from imprint.hooklib.state import read_state
    from imprint.hooks.install import hook_command, hook_launcher

    named, other = tmp_path / "named", tmp_path / "other"
    words = shlex.split(hook_command(hook_launcher(), "stop", "claude-code", named))
    # The daemon the hook starts for its capture goes away at once (idle exit).
    env = {**os.environ, "IMPRINT_DATA_DIR": str(other), "IMPRINT_SERVER_IDLE_EXIT_SEC": "1"}
    event = {
        "session_id": "s1",
        "transcript_path": str(tmp_path / "none.jsonl"),
        "cwd": str(tmp_path),
    }
    done = subprocess.run(
        words, input=json.dumps(event), capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert read_state(named).get("claude-code", {}).get("stop", {}).get("runs") == 1
    assert not other.exists()


def test_status_warns_when_a_client_entry_names_another_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`hooks status` names a client whose MCP entry points its tools at another data dir
    than its hooks report to, and one whose entry names none (Codex would then read the
    default data dir), each with the install that fixes it."""
    import json

    from imprint.hooklib.settings import HookSettings
    from imprint.hooks.install import install_hooks
    from imprint.hooks.status import status_lines

    home = tmp_path / "home"
    chosen = tmp_path / "chosen"
    monkeypatch.setenv("IMPRINT_DATA_DIR", str(chosen))
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    monkeypatch.setattr("imprint.hooks.install.codex_executable", lambda: None)
    monkeypatch.setattr("imprint.hooks.status.codex_executable", lambda: None)
    for client in ("claude-code", "gemini"):
        install_hooks(client, "user", HookSettings(), home=home, project=tmp_path)
    claude = home / ".claude.json"
    data = json.loads(claude.read_text())
    data["mcpServers"]["imprint"]["env"]["IMPRINT_DATA_DIR"] = str(tmp_path / "stale")
    claude.write_text(json.dumps(data))
    gemini = home / ".gemini" / "settings.json"
    data = json.loads(gemini.read_text())
    del data["mcpServers"]["imprint"]["env"]
    gemini.write_text(json.dumps(data))
    text = "\n".join(status_lines(chosen, home=home, project=tmp_path))
    assert (
        f"its MCP entry ({claude}) names the data dir {tmp_path / 'stale'}, its hooks "
        f"{chosen}" in text
    ), text
    assert f"its MCP entry ({gemini}) names no data dir" in text, text
    assert text.count("run `imprint hooks install --client") >= 2, text


# -- 7: what install says is what it did ------------------------------------------------------


def test_gemini_install_writes_its_one_settings_file_once(tmp_path: Path) -> None:
    """Gemini keeps hooks and MCP servers in one settings.json: install writes it once, says
    `wrote:` once and keeps one backup (before: two `wrote:` lines, two backups)."""
    import json

    from imprint.hooklib.settings import HookSettings
    from imprint.hooks.install import install_hooks

    home = tmp_path / "home"
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"theme": "dark"}))
    report = install_hooks("gemini", "user", HookSettings(), home=home, project=tmp_path)
    wrote = [line for line in report if line.startswith(("wrote:", "unchanged:"))]
    assert wrote == [f"wrote: {settings}" + wrote[0].removeprefix(f"wrote: {settings}")], report
    assert len(list(settings.parent.glob("settings.json.imprint-*.bak"))) == 1
    data = json.loads(settings.read_text())
    assert data["theme"] == "dark" and "imprint" in data["mcpServers"] and data["hooks"]


def test_codex_trust_says_it_wrote_the_config_codex_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`hooks install --client codex --trust`, a second time: the trust records Codex writes
    into its config.toml are reported as a write of that file, not `unchanged` (before:
    `unchanged: config.toml` while [hooks.state] was added)."""
    from imprint.hooklib.settings import HookSettings
    from imprint.hooks import install
    from imprint.hooks.codex import CodexHook

    home = tmp_path / "home"
    config = home / ".codex" / "config.toml"
    monkeypatch.setenv("CODEX_HOME", str(config.parent))
    monkeypatch.setattr(install, "codex_executable", lambda: "/fake/codex")
    monkeypatch.setattr(install, "_codex_feature", lambda codex, report: "hooks")

    def trusted(codex: str, cwd: Path, which: object) -> list[CodexHook]:
        with config.open("a") as f:  # what Codex's config/batchWrite does
            f.write('\n[hooks.state."x:stop:0:0"]\ntrusted_hash = "h"\n')
        key = f"{config.parent / 'hooks.json'}:stop:0:0"
        command = install.hook_command(install.hook_launcher(), "stop", "codex")
        return [CodexHook(key, "stop", command, "trusted", True, "h")]

    monkeypatch.setattr(install, "trust_hooks", trusted)
    install.install_hooks("codex", "user", HookSettings(), home=home, project=tmp_path)
    report = install.install_hooks(
        "codex", "user", HookSettings(), home=home, project=tmp_path, trust=True
    )
    assert f"unchanged: {config}" not in report, report
    assert any(line.startswith(f"wrote: {config}") and "trust" in line for line in report), report


# -- 7: capabilities the same on every transport, each answered -------------------------------


def test_every_protocol_version_advertises_only_what_the_server_answers() -> None:
    """The snapshot the daemon answers (held equal to the live server by test_handshake)
    advertises no resource subscription and no list-changed notifications at any version:
    the server sends none, and `resources/subscribe` answers -32601 (before: the 2026-07-28
    `server/discover` over stdio said `resources.subscribe: true` and every `listChanged`
    true, while over HTTP they were false)."""
    from imprint.server.handshake import load_handshake

    snapshot = load_handshake()
    assert snapshot is not None
    found = [v["initialize"]["capabilities"] for v in snapshot["versions"].values()]
    found += [v["server/discover"]["capabilities"] for v in snapshot["modern"].values()]
    for caps in found:
        assert caps["resources"] == {"listChanged": False, "subscribe": False}, caps
        assert caps["tools"] == {"listChanged": False} and caps["prompts"] == {"listChanged": False}


def test_the_live_server_advertises_the_same_at_the_2026_version() -> None:
    """The server itself (what stdio and HTTP sessions both build) at 2026-07-28: no
    subscription and no list-changed notifications, as at every handshake version."""
    from imprint.server import build_server

    server = build_server(lambda: None)  # type: ignore[arg-type,return-value]
    low = server._lowlevel_server
    for version in ("2025-06-18", "2026-07-28"):
        caps = low.get_capabilities(None, {}, protocol_version=version)
        assert caps.resources is not None and caps.resources.subscribe is False, version
        assert caps.resources.list_changed is False and caps.tools is not None
        assert caps.tools.list_changed is False, version


# -- 7: a captured session reads right in search and recall -----------------------------------


def test_a_session_hit_shows_its_summary_and_its_turn_apart(tmp_path: Path, rt: object) -> None:
    """A captured session whose summary and first turn both match: the summary is a block
    of its own (`session:<id>`, a memory, no chunk number) and the turn another
    (`session:<id>#0`); never `session:<id>#0 +#0` (before: the summary, a memory at chunk
    0, and the turn at chunk 0 were folded into one header)."""
    from imprint.capture.session import capture_event, session_project
    from imprint.writes import Writes
    from tests.support.capture_support import Transcript
    from tests.support.tools import Session

    cwd = tmp_path / "demo-project"
    cwd.mkdir()
    t = Transcript(tmp_path / "claude" / "sess-9.jsonl", "sess-9", cwd)
    for n in range(4):
        t.turn(f"where does kestrel {n} nest", f"Kestrel {n} nests on ledge {n}.")
    assert capture_event(Writes(rt), rt.data_dir, t.event()) == 4  # type: ignore[attr-defined]
    project = session_project(str(cwd))
    found = Session(rt, cwd).ok("search", query="kestrel nests", project=project)  # type: ignore[arg-type]
    assert "+#0" not in found, found
    headers = [line for line in found.splitlines() if "session:sess-9" in line]
    assert any("session:sess-9#" in h and "| milestone |" not in h for h in headers), found
    assert any("session:sess-9 |" in h and "| milestone |" in h for h in headers), found


def test_one_chunk_and_one_turn_are_counted_in_the_singular(tmp_path: Path, rt: object) -> None:
    """recall's source and summary blocks of a one-chunk source say `1 chunk`, and a
    one-turn session's summary says `1 turn` (before: `1 chunks`, `1 turns`)."""
    from imprint.capture.session import capture_event
    from imprint.writes import Writes
    from tests.support.capture_support import Transcript
    from tests.support.tools import Session

    cwd = tmp_path / "demo-project"
    cwd.mkdir()
    session = Session(rt, cwd)  # type: ignore[arg-type]
    session.ok("ingest_content", name="one.md", content="the kestrel hovers", project="p")
    plan = [
        {"tool": "list_sources", "args": {"project": "p"}},
        {"tool": "file_summary", "args": {"source": "one.md", "project": "p"}},
    ]
    recalled = session.ok("recall", question="kestrel", plan=plan)
    assert "| 1 chunks |" not in recalled and "| 1 chunk | source" in recalled, recalled
    t = Transcript(tmp_path / "claude" / "s1.jsonl", "s1", cwd)
    t.turn("where does the kestrel nest", "On the ledge.")
    assert capture_event(Writes(rt), rt.data_dir, t.event()) == 1  # type: ignore[attr-defined]
    found = session.ok("search", query="kestrel nest ledge", detail="full")
    assert "(1 turn, id s1)" in found and "1 turns" not in found, found


def test_a_session_with_no_turn_yet_stores_no_summary(tmp_path: Path, rt: object) -> None:
    """A transcript that holds no turn yet (Gemini writes its chat file before the first
    answer; here only a hook's output): capture stores nothing, so search finds no empty
    `(0 turns)` summary; once a turn is there, it is captured with its summary (before: a
    `(0 turns)` milestone was stored and returned by search)."""
    from imprint.capture.session import capture_event, session_project
    from imprint.writes import Writes
    from tests.support.capture_support import Transcript, session_records

    cwd = tmp_path / "demo-project"
    cwd.mkdir()
    t = Transcript(tmp_path / "claude" / "s2.jsonl", "s2", cwd)
    t.hook_output()
    writes = Writes(rt)  # type: ignore[arg-type]
    assert capture_event(writes, rt.data_dir, t.event()) == 0  # type: ignore[attr-defined]
    project = session_project(str(cwd))
    assert session_records(rt, project, "session:s2") == []  # type: ignore[arg-type]
    t.turn("what about the falcon", "The falcon stays.")
    assert capture_event(writes, rt.data_dir, t.event()) == 1  # type: ignore[attr-defined]
    records = session_records(rt, project, "session:s2")  # type: ignore[arg-type]
    summary = [r.content for r in records if r.source_type == "memory"]
    assert len(summary) == 1 and "(1 turn," in summary[0], summary


def test_saying_a_decision_was_stored_is_no_decision_stated() -> None:
    """An assistant's "Stored the decision." (it called Imprint's store) is not listed under
    "Decisions stated"; a real one beside it still is (before: it was listed)."""
    from imprint.capture.summary import Notes
    from imprint.capture.transcript import Turn

    notes = Notes()
    texts = ["Stored the decision.", "I recorded the decision in Imprint.",
             "We'll use MkDocs for the docs instead of Sphinx."]  # fmt: skip
    notes.add(Turn(key="t1", prompt="docs?", texts=texts, tools=[]))  # type: ignore[call-arg]
    assert notes.decisions == ["We'll use MkDocs for the docs instead of Sphinx."], notes


# -- 6: hooks status says what the user needs ------------------------------------------------


def test_status_shows_the_plugin_and_each_clients_captures_in_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`hooks status` with the Claude Code plugin installed and enabled (no hooks in the
    settings): the plugin, not `not installed`; per client its last capture and its last
    capture failure in words (a hook that queued fine says `0 failed` while the capture
    failed); with no daemon, the last log line that says something, not a line of dashes
    (before: `claude-code: not installed`, the failure only as "N events waiting", the log
    line `-----`)."""
    import json
    import time

    from imprint.hooklib.state import record_run
    from imprint.hooks.status import status_lines

    monkeypatch.setattr("imprint.hooks.status.codex_executable", lambda: None)
    home, data = tmp_path / "home", tmp_path / "data"
    plugins = home / ".claude" / "plugins"
    plugins.mkdir(parents=True)
    (plugins / "installed_plugins.json").write_text(
        json.dumps({"version": 2, "plugins": {"imprint@imprint-local": [{"scope": "user"}]}})
    )
    (home / ".claude" / "settings.json").write_text(
        json.dumps({"enabledPlugins": {"imprint@imprint-local": True}})
    )
    record_run(data, "claude-code", "stop")
    (data / "capture").mkdir(parents=True, exist_ok=True)
    now = time.time()
    stats = {
        "claude-code": {
            "captures": 2, "turns": 7, "failures": 1, "last_capture_at": now - 60,
            "last_failure_at": now, "last_error": "capture: session s1: no transcript at '/x'",
        }
    }  # fmt: skip
    (data / "capture" / "clients.json").write_text(json.dumps(stats))
    (data / "run").mkdir(parents=True, exist_ok=True)
    (data / "run" / "daemon.stderr.log").write_text(
        "2026-12-04T10:00:00Z [error    ] daemon.start.failed  error=disk full\n"
        + "-" * 40
        + "\n\n"
    )
    lines = status_lines(data, home=home, project=tmp_path)
    text = "\n".join(lines)
    assert lines[0] == "claude-code: plugin imprint@imprint-local (enabled)", text
    assert "  capture: 2 captures (7 turns), the last at " in text, text
    assert "1 failed, the last at " in text and "no transcript at '/x'" in text, text
    assert "daemon.start.failed error=disk full" in text and "-----" not in text, text


# -- 2: a search beside a daemon imports only the light client --------------------------------


def _search_recorded(
    tmp_path: Path, *args: str
) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    modules = tmp_path / f"modules-{len(list(tmp_path.glob('modules-*')))}.txt"
    env = {**os.environ, "IMPRINT_DATA_DIR": str(tmp_path / "data")}
    done = subprocess.run(
        [sys.executable, "-c", _RECORD_MODULES, str(modules), "search", *args],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    return done, set(modules.read_text().split()) if modules.exists() else set()


def test_a_search_beside_a_daemon_loads_no_heavy_library(
    serve: StartDaemon,
    tmp_path: Path,
) -> None:
    """`imprint search` beside a running daemon asks it over the socket with the standard
    library alone: none of typer, click, rich, chromadb, pykka, MCP, pydantic, structlog or
    numpy is imported (before: all of them, about 3 s of CPU), and it prints what the full
    command line prints for the same search, filters and budget included; a tool error is
    one line and exit 2, as there."""
    from imprint.cli._daemon import via_daemon

    d, _ = serve(warm_embedder=False)
    args = {"query": "heron", "project": "", "type": "", "lang": "", "layer": "", "limit": 3}
    args |= {"mode": "lexical", "max_chars": None, "since": "2026-01-01", "workspace": ""}
    done, modules = _search_recorded(
        tmp_path, "heron", "--limit", "3", "--mode=lexical", "--since", "2026-01-01"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == via_daemon(d.data_dir, "search", args) + "\n"
    assert modules and not {m.split(".")[0] for m in modules} & set(_HEAVY), sorted(
        m for m in modules if m.split(".")[0] in _HEAVY
    )
    bad, _ = _search_recorded(tmp_path, "heron", "--mode", "fuzzy")
    assert bad.returncode == 2 and bad.stdout == ""
    assert len(bad.stderr.strip().splitlines()) == 1 and "mode" in bad.stderr, bad.stderr
