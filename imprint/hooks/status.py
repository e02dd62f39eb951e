"""`imprint hooks status`: per client, the hooks installed (user scope and this project's)
and per event its runs, last run and last failure with its reason; an installed hook that
never ran, one whose command names a file that is gone, whether Codex trusts each of its
hooks (it skips one until then), the plugin's hooks that found no `imprint`, and whether a
daemon runs to capture what the hooks queue."""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

from imprint.errors import InputError
from imprint.hooklib.events import CLIENTS, DATA_DIR_OPTION, EVENTS
from imprint.hooklib.state import read_state
from imprint.hooks.codex import (
    REVIEW,
    CodexError,
    codex_executable,
    hooks_feature,
    listed_hooks,
    trust_words,
)
from imprint.hooks.install import (
    Scope,
    client_files,
    entry_data_dir,
    our_commands,
    ours_in,
)
from imprint.hooks.mcp_entry import imprint_executable
from imprint.reads.hook_report import plugin_misses, skip_line, when

__all__ = ["plugin_state", "status_lines"]

_SAYS = re.compile(r"[^\W\d_]{3}")  # a log line that says something: a word, not dashes


def _missing_files(command: str) -> list[str]:
    """The files a hook command runs (its program, the launcher) that are not there: a
    moved or removed installation, whose hooks the client can no longer start."""
    try:
        words = shlex.split(command)
    except ValueError:
        return []
    named = [w for w in words[:4] if Path(w).is_absolute()]
    return [w for w in named if not Path(w).exists()]


def _codex_trust(hooks_files: list[Path], project: Path) -> dict[str, str]:
    """Per Imprint event, how the Codex on PATH holds Imprint's hook from `hooks_files`, or
    why it cannot be asked (under the key "")."""
    codex = codex_executable()
    if codex is None:
        return {"": "codex is not on PATH, so whether it trusts these hooks is unknown"}
    try:
        listed = listed_hooks(codex, project)
    except CodexError as exc:
        return {"": f"codex: {exc}"}
    tests = [ours_in(path) for path in hooks_files]
    return trust_words([h for h in listed if any(test(h) for test in tests)])


def _codex_notes(
    trust: dict[str, str], scopes: list[Scope], home: Path, project: Path
) -> list[str]:
    """Below Codex's hooks: why Codex could not be asked, how to trust what it skips, and a
    `codex_hooks` key Codex now reports as deprecated on every run."""
    notes = [f"  {trust['']}"] if "" in trust else []
    if any(said != "trusted by Codex" for event, said in trust.items() if event):
        notes.append(f"  {REVIEW}")
    stale = []
    for scope in scopes:
        files = client_files("codex", scope, home, project)
        config = files.mcp
        try:
            features = tomllib.loads(files.open(config).text or "").get("features", {})
        except (InputError, tomllib.TOMLDecodeError):
            continue
        if isinstance(features, dict) and "codex_hooks" in features:
            stale.append(config)
    codex = codex_executable() if stale else None
    try:
        renamed = codex is not None and hooks_feature(codex) == "hooks"
    except CodexError:
        renamed = False
    for config in stale if renamed else []:
        notes.append(
            f"  {config}: [features] codex_hooks is Codex's old name for hooks (it warns "
            "of it on every run): `imprint hooks install --client codex` renames it"
        )
    return notes


def _named_data_dir(command: str) -> str | None:
    """The data dir a hook command names (`-X imprint_data_dir=DIR`), or None."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    prefix = f"{DATA_DIR_OPTION}="
    return next((w.removeprefix(prefix) for w in words[:6] if w.startswith(prefix)), None)


def _data_dir_notes(
    client: str,
    commands: dict[Scope, dict[str, list[str]]],
    data_dir: Path,
    home: Path,
    project: Path,
) -> list[str]:
    """Where a client's tools and its hooks would see different memories: its MCP entry
    naming another data dir than its hooks, or none (Codex passes its server no
    environment, so it would read the default); hooks reporting to another data dir than
    this status reads."""
    fix = f"run `imprint hooks install --client {client}` with IMPRINT_DATA_DIR set to the one"
    notes = []
    for scope, found in commands.items():
        if not found:
            continue
        named = {_named_data_dir(c) for listed in found.values() for c in listed}
        hooks_dir = next(iter(named)) if len(named) == 1 else None
        hooks_dir = hooks_dir or str(data_dir)
        if hooks_dir != str(data_dir):
            notes.append(
                f"  its {scope} hooks report to the data dir {hooks_dir}, not this one "
                f"({data_dir}): run this with IMPRINT_DATA_DIR={hooks_dir} to see their runs"
            )
        entry = entry_data_dir(client, scope, home, project)
        if entry is None:
            continue
        path, entry_dir = entry
        if not entry_dir:
            notes.append(
                f"  its MCP entry ({path}) names no data dir: its tools use the client's "
                f"IMPRINT_DATA_DIR or the default (Codex passes none), its hooks {hooks_dir}; "
                f"{fix} you want"
            )
        elif entry_dir != hooks_dir:
            notes.append(
                f"  its MCP entry ({path}) names the data dir {entry_dir}, its hooks "
                f"{hooks_dir}: its tools do not see what its hooks capture; {fix} you want"
            )
    return notes


PLUGIN_NAME = "imprint"  # plugin/.claude-plugin/plugin.json


def _json_object(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def plugin_state(home: Path, project: Path) -> list[str]:
    """Imprint's Claude Code plugin as Claude Code records it: per plugin id
    (`imprint@<marketplace>`), `enabled`, `disabled` or `installed` (listed in
    installed_plugins.json, enabled nowhere)."""
    installed = _json_object(home / ".claude" / "plugins" / "installed_plugins.json")
    listed = installed.get("plugins")
    ids = (
        {k for k in listed if k.split("@")[0] == PLUGIN_NAME} if isinstance(listed, dict) else set()
    )
    enabled: dict[str, bool] = {}
    for settings in (
        home / ".claude" / "settings.json",
        project / ".claude" / "settings.json",
        project / ".claude" / "settings.local.json",
    ):
        flags = _json_object(settings).get("enabledPlugins")
        if isinstance(flags, dict):
            for key, on in flags.items():
                if isinstance(key, str) and key.split("@")[0] == PLUGIN_NAME:
                    enabled[key] = on is True  # the narrower scope, read later, wins
    said = []
    for key in sorted(ids | set(enabled)):
        state = "installed" if key not in enabled else "enabled" if enabled[key] else "disabled"
        said.append(f"plugin {key} ({state})")
    return said


def _capture_line(row: dict[str, Any]) -> str:
    """A client's captures in words: how many, when the last was, and the last failure."""
    captures, turns = int(row.get("captures", 0) or 0), int(row.get("turns", 0) or 0)
    line = (
        f"  capture: {captures} captures ({turns} turns), the last at "
        f"{when(row.get('last_capture_at'))}"
        if captures
        else "  capture: nothing captured yet"
    )
    failures = int(row.get("failures", 0) or 0)
    if failures:
        line += (
            f"; {failures} failed, the last at {when(row.get('last_failure_at'))}: "
            f"{' '.join(str(row.get('last_error', '')).split())[:300]}"
        )
    return line


def _plugin_missing(data_dir: Path, rows: dict[str, dict[str, Any]]) -> list[str]:
    """The plugin's hooks that found no `imprint` to run since a Claude Code hook last ran:
    how often, when last, and the fix."""
    missed, last = plugin_misses(data_dir, rows)
    if not missed:
        return []
    return [
        f"  plugin: its hooks found no `imprint` to run {missed} times, the last at "
        f"{when(last)}, so nothing was briefed or captured: set "
        f"IMPRINT_BIN={imprint_executable()} in Claude Code's environment (`env` in "
        "~/.claude/settings.json), or put that folder on its PATH"
    ]


def status_lines(data_dir: Path, *, home: Path, project: Path) -> list[str]:
    """Per client: what is installed where, and per event its runs, last run and last
    failure with its reason; an installed hook that never ran, one whose command names a
    file that is gone, and (Codex) whether Codex trusts it, since it skips one until then."""
    from imprint.hooklib.queue import client_stats

    state, captured = read_state(data_dir), client_stats(data_dir)
    order = {event: i for i, event in enumerate(EVENTS)}
    lines: list[str] = []
    for client in CLIENTS:
        scopes: tuple[Scope, ...] = ("user", "project")
        unread: list[str] = []
        commands = {
            scope: our_commands(client, scope, home=home, project=project, unread=unread)
            for scope in scopes
        }
        where = [f"{s}: {', '.join(e)}" for s, e in commands.items() if e]
        plugin = plugin_state(home, project) if client == "claude-code" else []
        lines.append(f"{client}: {'; '.join(where + plugin) or 'not installed'}")
        if where and any(p.endswith("(enabled)") for p in plugin):
            lines.append(
                "  both the plugin and the hooks in its settings run: each hook runs twice; "
                "`imprint hooks uninstall --client claude-code` keeps the plugin's"
            )
        lines += [f"  not read: {reason}" for reason in unread]
        rows = state.get(client, {})
        installed = {event for found in commands.values() for event in found}
        with_hooks = [scope for scope, found in commands.items() if found]
        trust: dict[str, str] = {}
        if client == "codex" and installed:
            files = [client_files(client, scope, home, project).hooks for scope in with_hooks]
            trust = _codex_trust(files, project)
        for event in sorted(set(rows) | installed, key=lambda e: (order.get(e, len(order)), e)):
            row = rows.get(event)
            if row is None:
                line = f"  {event}: installed, never ran"
            else:
                line = (
                    f"  {event}: {row.get('runs', 0)} runs, {row.get('failures', 0)} failed; "
                    f"last run {when(row.get('last_run'))} ({row.get('last_ms', 0)} ms)"
                )
                if row.get("failures"):
                    line += (
                        f"; last failure {when(row.get('last_failure'))}: "
                        f"{row.get('last_error', '')}"
                    )
            if event in trust:
                line += f"; {trust[event]}"
            lines.append(line)
        if isinstance(captured.get(client), dict):
            lines.append(_capture_line(captured[client]))
        skips = captured.get(client, {})
        if skips.get("skipped"):
            lines.append(f"  {skip_line(int(skips['skipped']), str(skips.get('last_skip', '')))}")
        if client == "codex" and installed:
            lines += _codex_notes(trust, with_hooks, home, project)
        lines += _data_dir_notes(client, commands, data_dir, home, project)
        gone = sorted(
            {
                path
                for found in commands.values()
                for listed in found.values()
                for command in listed
                for path in _missing_files(command)
            }
        )
        for path in gone:
            lines.append(
                f"  its hooks run {path}, which is not there: the client cannot start them; "
                f"run `imprint hooks install --client {client}` again"
            )
        if client == "claude-code":
            lines += _plugin_missing(data_dir, rows)
    lines += _daemon_lines(data_dir)
    for client in sorted(set(state) - set(CLIENTS)):
        for event, row in sorted(state[client].items()):
            lines.append(
                f"{client} {event}: {row.get('runs', 0)} runs, {row.get('failures', 0)} failed; "
                f"last failure {when(row.get('last_failure'))}: {row.get('last_error', '')}"
            )
    return lines


def _daemon_lines(data_dir: Path) -> list[str]:
    """Whether a daemon runs to capture what hooks queue, what waits for it, and, when none
    runs, the end of its log (a daemon that cannot start says why there)."""
    from imprint.daemon import running_daemon
    from imprint.hooklib.queue import waiting

    info = running_daemon(data_dir)
    count, oldest = waiting(data_dir)
    lines = [f"daemon: running (pid {info['pid']})" if info else "daemon: not running"]
    if count:
        lines.append(f"  capture queue: {count} events waiting, the oldest since {when(oldest)}")
    log_file = data_dir / "run" / "daemon.stderr.log"  # read only: nothing is created
    if info is None and log_file.is_file():
        with log_file.open("rb") as handle:
            handle.seek(max(0, log_file.stat().st_size - 4096))
            tail = handle.read().decode("utf-8", "replace").splitlines()
        last = next((line.strip() for line in reversed(tail) if _SAYS.search(line)), "")
        if last:
            at = when(log_file.stat().st_mtime)
            lines.append(f"  its log's last line ({at}): {' '.join(last.split())[:300]}")
    return lines
