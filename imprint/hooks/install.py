"""`imprint hooks install|uninstall`: each client's hook configuration, and its MCP server
entry when it has none (`imprint.hooks.mcp_entry`; `imprint hooks status` is
`imprint.hooks.status`).

Installing is idempotent: Imprint's own hooks (commands `<imprint> hook ...`) are taken out
of the file and put back, every other setting stays as it was, and a file is written only
when it changes, after a timestamped copy of it is kept beside it. A file that does not
parse is never written over: the error names it. Every file is read and written through
`imprint.hooks._confined`, never through a link out of the scope being edited, and an
install writes all its files or none.

Where each client keeps its configuration (user scope under the home folder, project scope
under the project's folder):
- Claude Code: hooks in `.claude/settings.json`; its MCP servers in `~/.claude.json` (user)
  or `.mcp.json` (project).
- Codex: hooks in `.codex/hooks.json`, enabled by `[features] hooks = true` (`codex_hooks`
  before Codex renamed it) in `.codex/config.toml`, which also holds
  `[mcp_servers.imprint]` (`$CODEX_HOME` for user). Codex runs a hook only once it is
  trusted: install says whether it is, and `--trust` trusts Imprint's own.
- Gemini CLI: hooks and `mcpServers` in `.gemini/settings.json`.
- Cursor: hooks in `.cursor/hooks.json` (`"version": 1`); MCP servers in `.cursor/mcp.json`.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import shlex
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal

from imprint._fs import DATA_DIR_ENV, data_dir
from imprint.errors import InputError
from imprint.hooklib.events import (
    CAPTURE_EVENTS,
    CLIENTS,
    DATA_DIR_OPTION,
    EVENTS,
    NATIVE_EVENTS,
)
from imprint.hooklib.settings import HookSettings
from imprint.hooks._confined import ConfigFile, Pending, confined, write_all
from imprint.hooks.codex import (
    REVIEW,
    CodexError,
    CodexHook,
    codex_executable,
    hooks_feature,
    listed_hooks,
    trust_hooks,
    trust_words,
)
from imprint.hooks.mcp_entry import (
    edit_codex_toml,
    edit_mcp_json,
    imprint_server,
)

__all__ = [
    "Scope",
    "client_files",
    "entry_data_dir",
    "hook_command",
    "hook_launcher",
    "install_hooks",
    "our_commands",
    "ours_in",
    "uninstall_hooks",
]

Scope = Literal["user", "project"]
Data = dict[str, Any]


_LAUNCHER = ("imprint", "hooks", "launcher.py")


def hook_launcher() -> list[str]:
    """How a hook starts: this interpreter, isolated and without `site`, running the
    launcher of this installation (`imprint.hooks.launcher`): 30-50 ms less than the
    console script at every hook."""
    return [sys.executable, "-I", "-S", str(Path(__file__).with_name(_LAUNCHER[-1]))]


def hook_command(launcher: list[str], event: str, client: str, root: Path | None = None) -> str:
    """The hook's command line; with `root`, it names that data dir, whatever
    IMPRINT_DATA_DIR the client's environment holds: as an interpreter option before the
    launcher (`-X imprint_data_dir=DIR`, read by `imprint.hooks.entry`), which no shell
    has to expand and no client's own arguments can take for theirs."""
    if root is not None:
        launcher = [*launcher[:-1], "-X", f"{DATA_DIR_OPTION}={root}", launcher[-1]]
    return f"{shlex.join(launcher)} {event} --client {client}"


def _is_ours(command: object) -> bool:
    """Imprint's hook, as installed now (the launcher) or before (`imprint hook ...`)."""
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if len(words) >= 2 and Path(words[0]).name == "imprint" and words[1] == "hook":
        return True
    # The interpreter, -I, -S, perhaps -X imprint_data_dir=DIR, then the launcher.
    return any(Path(word).parts[-3:] == _LAUNCHER for word in words[1:6])


@dataclass(frozen=True)
class _Files:
    hooks: Path
    mcp: Path  # JSON with `mcpServers`, or Codex's config.toml
    root: Path  # the scope's folder: no link takes a read or a write out of it
    scope: Scope

    def open(self, path: Path) -> ConfigFile:
        return confined(path, self.root, self.scope)


def client_files(client: str, scope: Scope, home: Path, project: Path) -> _Files:
    base = home if scope == "user" else project
    if client == "claude-code":
        mcp = home / ".claude.json" if scope == "user" else project / ".mcp.json"
        return _Files(base / ".claude" / "settings.json", mcp, base, scope)
    if client == "codex":
        folder, root = base / ".codex", base
        if scope == "user" and os.environ.get("CODEX_HOME"):
            folder = root = Path(os.environ["CODEX_HOME"]).expanduser()
        return _Files(folder / "hooks.json", folder / "config.toml", root, scope)
    if client == "gemini":
        settings = base / ".gemini" / "settings.json"
        return _Files(settings, settings, base, scope)
    if client == "cursor":
        cursor = base / ".cursor"
        return _Files(cursor / "hooks.json", cursor / "mcp.json", base, scope)
    raise InputError(f"client: {client!r} is not one of {', '.join(CLIENTS)}")


def _events(client: str, settings: HookSettings) -> list[str]:
    """The events installed for `client`: prompt submit only where hooks.prompt_submit."""
    return [
        e
        for e in EVENTS
        if e in NATIVE_EVENTS[client] and (e != "prompt-submit" or settings.prompt_submit)
    ]


def _client_timeout(client: str, budget_ms: int) -> int:
    """The client's own limit on the hook: past ours (which always answers in time), in
    the client's unit (Gemini CLI: milliseconds; the others: seconds)."""
    seconds = max(2, math.ceil(budget_ms / 1000) + 1)
    return seconds * 1000 if client == "gemini" else seconds


@dataclass(frozen=True)
class _Number:
    """A JSON number past a double (`1e400`), kept as written: as a float it would be
    written back as `Infinity`, which is not JSON."""

    text: str


def _float(text: str) -> float | _Number:
    value = float(text)
    return value if math.isfinite(value) else _Number(text)


def _constant(word: str) -> None:
    raise ValueError(f"{word} is not JSON")


def _read_json(file: ConfigFile) -> Data:
    try:
        data = json.loads(file.text or "{}", parse_float=_float, parse_constant=_constant)
    except (ValueError, RecursionError) as exc:
        raise InputError(
            f"{file.shown}: not valid JSON ({exc}); fix or move it, then run again"
        ) from exc
    if not isinstance(data, dict):
        raise InputError(f"{file.shown}: not a JSON object; fix or move it, then run again")
    return data


def _dump_json(data: Data) -> str:
    """`data` as JSON, a `_Number` as its own text."""
    literal: dict[str, str] = {}

    def number(value: object) -> str:
        if not isinstance(value, _Number):
            raise TypeError(f"{type(value).__name__} is not JSON")
        stand_in = f"imprint-number-{secrets.token_hex(8)}"  # a string nothing else holds
        literal[json.dumps(stand_in)] = value.text
        return stand_in

    text = json.dumps(data, indent=2, default=number, allow_nan=False)
    for stand_in, value in literal.items():
        text = text.replace(stand_in, value)
    return text + "\n"


def _without_ours(hooks: Data, client: str) -> Data:
    """The `hooks` table with Imprint's entries taken out (and groups they emptied)."""
    kept: Data = {}
    for event, entries in hooks.items():
        if not isinstance(entries, list):
            kept[event] = entries
            continue
        out = []
        for entry in entries:
            if client == "cursor" or not isinstance(entry, dict) or "hooks" not in entry:
                if not (isinstance(entry, dict) and _is_ours(entry.get("command"))):
                    out.append(entry)
                continue
            inner = [
                h
                for h in entry["hooks"]
                if not (isinstance(h, dict) and _is_ours(h.get("command")))
            ]
            if inner:
                out.append({**entry, "hooks": inner})
        if out:
            kept[event] = out
    return kept


def _with_ours(
    hooks: Data, client: str, events: list[str], settings: HookSettings, root: Path
) -> Data:
    launcher = hook_launcher()
    out = dict(hooks)
    for event in events:
        native = NATIVE_EVENTS[client][event]
        command = hook_command(launcher, event, client, root)
        timeout = _client_timeout(client, settings.budget_ms(event))
        entry: Data
        if client == "cursor":
            entry = {"command": command, "timeout": timeout}
        else:
            handler: Data = {"type": "command", "command": command, "timeout": timeout}
            if client == "gemini":
                handler = {"name": f"imprint-{event}", **handler}
            entry = {"hooks": [handler]}
        out[native] = [*out.get(native, []), entry]
    return out


def _edit_hooks(
    data: Data, client: str, events: list[str], settings: HookSettings, root: Path
) -> Data:
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise InputError(f"hooks: not a table in the {client} configuration; fix it first")
    updated = _with_ours(_without_ours(hooks, client), client, events, settings, root)
    out = {**data, "hooks": updated}
    if not updated:
        out.pop("hooks")
    if client == "cursor" and updated:
        out = {"version": data.get("version", 1), **out}
    return out


def entry_data_dir(client: str, scope: Scope, home: Path, project: Path) -> tuple[Path, str] | None:
    """The file holding `client`'s Imprint MCP entry in `scope` and the data dir it names
    ("" for none); None when there is no such entry (or its file does not parse)."""
    path = client_files(client, scope, home, project).mcp
    try:
        text = path.read_text("utf-8")
        if client == "codex":
            servers = tomllib.loads(text).get("mcp_servers")
        else:
            loaded = json.loads(text or "{}")
            servers = loaded.get("mcpServers") if isinstance(loaded, dict) else None
    except (OSError, ValueError, InputError):
        return None
    name = imprint_server(servers)
    if name is None:
        return None
    assert isinstance(servers, dict)
    entry = servers[name]
    env = entry.get("env") if isinstance(entry, dict) else None
    named = env.get(DATA_DIR_ENV) if isinstance(env, dict) else None
    return path, named if isinstance(named, str) else ""


def _current_text(path: Path) -> str | None:
    """What `path` holds now (a file another program, Codex, may have written); None."""
    try:
        return path.read_text("utf-8")
    except (OSError, ValueError):
        return None


def _edited_text(file: ConfigFile, after: str) -> Pending | ConfigFile:
    """`after` to be written over `file`, or `file` itself when it already says it."""
    return file if file.text == after else Pending(file, after)


def _edited_json(file: ConfigFile, edits: list[Callable[[Data], Data]]) -> Pending | ConfigFile:
    """`file` as `edits` leave it, or `file` itself when they change nothing (a file that is
    not valid JSON: InputError, naming it)."""
    data = _read_json(file)
    after = data
    for edit in edits:
        after = edit(after)
    if after == data and file.data is not None:
        return file
    return Pending(file, _dump_json(after))


def _written(plan: list[Pending | ConfigFile], report: list[str]) -> None:
    """Write what `plan` changes (all of it or nothing), then say what became of each file."""
    write_all([p for p in plan if isinstance(p, Pending)])
    for p in plan:
        report.append(p.line() if isinstance(p, Pending) else f"unchanged: {p.shown}")


def _codex_feature(codex: str | None, report: list[str]) -> str:
    """The `[features]` key this Codex turns hooks on with (`hooks` when it cannot say)."""
    if codex is None:
        return "hooks"
    try:
        return hooks_feature(codex)
    except CodexError as exc:
        report.append(f"codex: {exc}; [features] hooks = true is written")
        return "hooks"


def ours_in(hooks_file: Path) -> Callable[[CodexHook], bool]:
    """Whether a hook Codex lists is one of Imprint's from `hooks_file`."""
    wanted = hooks_file.resolve()

    def test(hook: CodexHook) -> bool:
        source = hook.key.rsplit(":", 3)[0]
        return _is_ours(hook.command) and Path(source).resolve() == wanted

    return test


def _codex_report(codex: str | None, hooks_file: Path, cwd: Path, trust: bool) -> list[str]:
    """What Codex says of the hooks just installed, after trusting them when asked."""
    if codex is None:
        return ["codex is not on PATH, so whether Codex trusts these hooks is unknown. " + REVIEW]
    ours = ours_in(hooks_file)
    try:
        listed = trust_hooks(codex, cwd, ours) if trust else listed_hooks(codex, cwd)
    except CodexError as exc:
        return [f"codex: {exc}. " + REVIEW]
    words = trust_words([h for h in listed if ours(h)])
    if not words:
        return [
            f"Codex does not load {hooks_file} in {cwd} (a project's .codex/ loads only in "
            "a project Codex trusts): trust the project in codex, then run this again"
        ]
    lines = [f"codex, the {event} hook: {said}" for event, said in sorted(words.items())]
    if any(said != "trusted by Codex" for said in words.values()):
        lines.append(REVIEW)
    elif trust:
        lines.append(
            "Imprint's hooks are trusted in Codex as they are now (their hashes under "
            "[hooks.state] in Codex's config, as its /hooks review records them)"
        )
    return lines


def install_hooks(
    client: str,
    scope: Scope,
    settings: HookSettings,
    *,
    home: Path,
    project: Path,
    trust: bool = False,
    root: Path | None = None,
) -> list[str]:
    """Install `client`'s hooks (and its MCP server entry if it has none); what was done,
    one line each, ending with what capture means. Codex: whether it trusts them (it skips
    a hook until then), and with `trust` Imprint's own hooks trusted (`imprint.hooks.codex`)."""
    files = client_files(client, scope, home, project)
    events = _events(client, settings)
    root = (root or data_dir()).expanduser().absolute()
    report: list[str] = []
    hooks = files.open(files.hooks)
    hook_edit = partial(_edit_hooks, client=client, events=events, settings=settings, root=root)
    mcp_edit = partial(edit_mcp_json, client=client, root=root)
    # Every file is read and edited before any is written, so one that fails writes nothing.
    if client == "codex":
        codex = codex_executable()
        config = files.open(files.mcp)
        feature = _codex_feature(codex, report)
        toml = edit_codex_toml(config.text or "", files.mcp, root, feature)
        plan = [_edited_json(hooks, [hook_edit]), _edited_text(config, toml)]
    elif files.mcp == files.hooks:  # Gemini's one settings.json: both edits, one write
        plan = [_edited_json(hooks, [hook_edit, mcp_edit])]
    else:
        plan = [_edited_json(hooks, [hook_edit]), _edited_json(files.open(files.mcp), [mcp_edit])]
    _written(plan, report)
    report.append(f"data dir: {root} (named in the MCP entry and in every hook)")
    captured = [e for e in events if e in CAPTURE_EVENTS]
    report.append(f"hooks: {', '.join(events)}")
    if client == "codex":
        # Trusting writes Codex's own records into its user config: said as a write.
        trusted_in = client_files("codex", "user", home, project).mcp
        untrusted = _current_text(trusted_in)
        report += _codex_report(codex, files.hooks, project, trust)
        if _current_text(trusted_in) != untrusted:
            said = f"wrote: {trusted_in} (Codex recorded its trust of Imprint's hooks)"
            stale = f"unchanged: {trusted_in}"
            report[:] = [said if line == stale else line for line in report]
            if said not in report:
                report.insert(0, said)
    if "prompt-submit" not in events and "prompt-submit" in NATIVE_EVENTS[client]:
        report.append(
            "prompt submit: off (hooks.prompt_submit); turn it on and install again to add it"
        )
    report.append(
        f"capture is enabled for {client}: its {', '.join(captured)} hooks hand each "
        "session's transcript to Imprint, which stores it (secrets redacted) as a searchable "
        "session source with a summary. Opt a project out with hooks.exclude; "
        f"`imprint hooks uninstall --client {client}` turns it off."
    )
    return report


def uninstall_hooks(client: str, scope: Scope, *, home: Path, project: Path) -> list[str]:
    """Take Imprint's hooks out of `client`'s configuration; its MCP server entry stays."""
    files = client_files(client, scope, home, project)
    report: list[str] = []
    hooks = files.open(files.hooks)
    if hooks.data is not None:
        edit = _edited_json(
            hooks, [lambda d: _edit_hooks(d, client, [], HookSettings(), data_dir())]
        )
        _written([edit], report)
    else:
        report.append(f"unchanged: {files.hooks} (no such file)")
    report.append(f"capture is off for {client}; its MCP server entry stays ({files.mcp})")
    return report


def our_commands(
    client: str, scope: Scope, *, home: Path, project: Path, unread: list[str] | None = None
) -> dict[str, list[str]]:
    """Per Imprint event, the commands of Imprint's hooks in `client`'s configuration of
    `scope`; a file that cannot be read (not JSON, or a link out of the scope, which is not
    followed) has none, and the reason goes to `unread`."""
    files = client_files(client, scope, home, project)
    try:
        hooks = _read_json(files.open(files.hooks)).get("hooks", {})
    except InputError as exc:
        if unread is not None:
            unread.append(str(exc))
        return {}
    found: dict[str, list[str]] = {}
    for event, native in NATIVE_EVENTS[client].items():
        entries = hooks.get(native, []) if isinstance(hooks, dict) else []
        commands = [
            h.get("command")
            for entry in entries
            if isinstance(entry, dict)
            for h in (entry.get("hooks", []) if client != "cursor" else [entry])
            if isinstance(h, dict)
        ]
        ours = [c for c in commands if isinstance(c, str) and _is_ours(c)]
        if ours:
            found[event] = ours
    return found
