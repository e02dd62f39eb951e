"""The `imprint` MCP server entry in each client's configuration, where it has none: added
to a JSON file's `mcpServers` (`edit_mcp_json`) or to Codex's config.toml as text, with its
comments and layout kept (`edit_codex_toml`), naming the data dir so that tools and hooks
meet. `imprint.hooks.install` writes what these give.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import tomllib
from pathlib import Path
from typing import Any

from imprint._fs import DATA_DIR_ENV
from imprint.errors import InputError

__all__ = ["edit_codex_toml", "edit_mcp_json", "imprint_executable", "imprint_server"]

Data = dict[str, Any]


def imprint_executable() -> str:
    """The `imprint` this process runs as, by absolute path (a client's PATH may lack it)."""
    beside = Path(sys.executable).with_name("imprint")
    if beside.is_file():
        return str(beside)
    return shutil.which("imprint") or "imprint"


def _server_entry(client: str, root: Path) -> Data:
    # The data dir by name: Codex passes no environment to an MCP server, and any client
    # may start from a shell without IMPRINT_DATA_DIR; tools and hooks must meet.
    entry: Data = {"command": imprint_executable(), "args": ["serve"]}
    entry["env"] = {DATA_DIR_ENV: str(root)}
    return {"type": "stdio", **entry} if client == "claude-code" else entry


def imprint_server(servers: object) -> str | None:
    """The name of Imprint's entry among a client's MCP servers (`imprint`, else one whose
    command is an `imprint`), or None."""
    if not isinstance(servers, dict):
        return None
    if "imprint" in servers:
        return "imprint"
    return next(
        (
            name
            for name, s in servers.items()
            if isinstance(s, dict) and Path(str(s.get("command", ""))).name == "imprint"
        ),
        None,
    )


def _has_imprint_server(servers: object) -> bool:
    return imprint_server(servers) is not None


def _named_env(entry: object, where: str, root: Path) -> Data | None:
    """The entry's `env` with IMPRINT_DATA_DIR naming `root`; None when it already does."""
    env = entry.get("env") if isinstance(entry, dict) else None
    if env is None:
        env = {}
    if not isinstance(env, dict):
        raise InputError(f"{where}.env: not a table; fix it first")
    if env.get(DATA_DIR_ENV) == str(root):
        return None
    return {**env, DATA_DIR_ENV: str(root)}


def edit_mcp_json(data: Data, client: str, root: Path) -> Data:
    servers = data.get("mcpServers", {})
    name = imprint_server(servers)
    if name is None:
        if not isinstance(servers, dict):
            raise InputError("mcpServers: not a table; fix it first")
        return {**data, "mcpServers": {**servers, "imprint": _server_entry(client, root)}}
    entry = servers[name]
    if not isinstance(entry, dict):
        return data  # not an entry Imprint can read; status names its data dir as unknown
    env = _named_env(entry, f"mcpServers.{name}", root)
    if env is None:
        return data
    return {**data, "mcpServers": {**servers, name: {**entry, "env": env}}}


_TABLE = re.compile(r"^\s*\[([^\[\]]+)\]\s*(#.*)?$")


def _table_line(lines: list[str], name: str) -> int | None:
    """The line of the `[name]` table header, if there is one."""
    for index, line in enumerate(lines):
        found = _TABLE.match(line)
        if found and found.group(1).strip() == name:
            return index
    return None


def edit_codex_toml(text: str, path: Path, root: Path, feature: str = "hooks") -> str:
    """Codex's config.toml with `[features] <feature> = true` (`hooks`, or `codex_hooks` for
    a Codex from before the rename, whose old key is then renamed) and an
    `[mcp_servers.imprint]` table, edited as text so comments and layout stay."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML ({exc}); fix it, then run again") from exc
    lines = text.splitlines()
    features = data.get("features", {})
    old = "codex_hooks" if feature == "hooks" else None
    done = isinstance(features, dict) and features.get(feature) is True
    if not done or (old is not None and old in features):
        header = _table_line(lines, "features")
        if header is None:
            if "features" in data:
                raise InputError(
                    f"{path}: set {feature} = true in its features yourself "
                    "(they are not a [features] table), then run again"
                )
            lines += ["", "[features]", f"{feature} = true"]
        else:
            end = next(
                (i for i in range(header + 1, len(lines)) if _TABLE.match(lines[i])), len(lines)
            )

            def key_line(name: str) -> int | None:
                pattern = re.compile(rf"\s*{name}\s*=")
                return next((i for i in range(header + 1, end) if pattern.match(lines[i])), None)

            at, stale = key_line(feature), key_line(old) if old else None
            if at is None and stale is not None:
                at, stale = stale, None  # the old name's line becomes the new one
            if at is None:
                lines.insert(header + 1, f"{feature} = true")
            else:
                lines[at] = f"{feature} = true"
            if stale is not None:
                del lines[stale]
    name = imprint_server(data.get("mcp_servers"))
    if name is None:
        lines += [
            "",
            "[mcp_servers.imprint]",
            f"command = {json.dumps(imprint_executable())}",
            'args = ["serve"]',
            f"env = {_inline_table({DATA_DIR_ENV: str(root)})}",
        ]
    else:
        lines = _codex_entry_env(lines, data["mcp_servers"][name], name, path, root)
    edited = "\n".join(lines).lstrip("\n") + "\n"
    check = tomllib.loads(edited)
    if check.get("features", {}).get(feature) is not True:
        raise InputError(f"{path}: could not set [features] {feature} = true; set it yourself")
    server = check.get("mcp_servers", {}).get(name or "imprint", {})
    if server.get("env", {}).get(DATA_DIR_ENV) != str(root):
        raise InputError(
            f"{path}: could not set env.{DATA_DIR_ENV} in [mcp_servers.{name}]; add "
            f"{DATA_DIR_ENV} = {json.dumps(str(root))} to its env yourself"
        )
    return edited


_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _inline_table(values: dict[str, str]) -> str:
    """A TOML inline table of strings (JSON's string escapes are TOML's basic strings')."""
    keys = (k if _BARE_KEY.match(k) else json.dumps(k) for k in values)
    pairs = (f"{k} = {json.dumps(v)}" for k, v in zip(keys, values.values(), strict=True))
    return "{ " + ", ".join(pairs) + " }"


def _codex_entry_env(
    lines: list[str], entry: object, name: str, path: Path, root: Path
) -> list[str]:
    """The config's lines with `[mcp_servers.<name>]` naming `root` in its env: a one-line
    `env = {...}` rewritten, an `[mcp_servers.<name>.env]` table given the key, or an env
    line added under the entry's header."""
    env = _named_env(entry, f"mcp_servers.{name}", root)
    if env is None:
        return lines
    quoted = name if _BARE_KEY.match(name) else json.dumps(name)
    header = _table_line(lines, f"mcp_servers.{quoted}")
    sub = _table_line(lines, f"mcp_servers.{quoted}.env")
    out = list(lines)
    if sub is not None:
        out.insert(sub + 1, f"{DATA_DIR_ENV} = {json.dumps(str(root))}")
        return out
    if header is None:
        return out  # written some other way (dotted keys): the check after says so
    end = next((i for i in range(header + 1, len(out)) if _TABLE.match(out[i])), len(out))
    at = next((i for i in range(header + 1, end) if re.match(r"\s*env\s*=", out[i])), None)
    line = f"env = {_inline_table(env)}"
    if at is None:
        out.insert(header + 1, line)
    else:
        out[at] = line  # tomllib read it as a table: on one line, or the check after fails
    return out
