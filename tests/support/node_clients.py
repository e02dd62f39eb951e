"""The MCP clients the tests run against Imprint, and the Node they run on: exactly the tree
in scripts/node/package-lock.json, which scripts/test.sh installs into .ci/node with
`npm ci --ignore-scripts`.

Outside CI a missing client skips its test (as the browser test does without Chromium); in
CI (`CI` set) it fails: a check that silently stops running is no check."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

__all__ = ["NODE_MODULES", "client", "client_env", "pinned", "run_client"]

ROOT = Path(__file__).resolve().parents[2]
NODE_MODULES = ROOT / ".ci" / "node" / "node_modules"
_BIN = NODE_MODULES / ".bin"
# Each client's executable under node_modules. Claude Code's `claude` is a placeholder its
# install script replaces with the native binary; with install scripts off it is run from
# the platform package directly.
_EXECUTABLES = {
    "@anthropic-ai/claude-code": "@anthropic-ai/claude-code-linux-x64/claude",
    "@google/gemini-cli": ".bin/gemini",
    "@modelcontextprotocol/conformance": ".bin/conformance",
    "@modelcontextprotocol/inspector": ".bin/mcp-inspector",
    "@openai/codex": ".bin/codex",
}


def pinned(package: str) -> str:
    """The version scripts/node/package.json pins for `package`."""
    manifest = json.loads((ROOT / "scripts" / "node" / "package.json").read_text("utf-8"))
    return str(manifest["dependencies"][package])


def client(package: str) -> str:
    """The installed client's executable, at the pinned version; skipped outside CI, failed
    in CI, when it is not installed."""
    found = NODE_MODULES / _EXECUTABLES[package]
    version = pinned(package)
    try:
        installed = json.loads((NODE_MODULES / package / "package.json").read_text("utf-8"))
    except (OSError, ValueError):
        installed = {}
    if found.exists() and installed.get("version") == version:
        return str(found)
    why = f"{package} {version} is not installed in .ci/node (scripts/test.sh runs npm ci)"
    if os.environ.get("CI"):
        pytest.fail(why)
    pytest.skip(why)


def client_env(home: Path, **extra: str) -> dict[str, str]:
    """An environment for a client: its own scratch HOME, the locked Node first on PATH,
    and nothing that sends anything beyond this machine's loopback."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("IMPRINT_")}
    env.update(
        HOME=str(home),
        PATH=f"{_BIN}{os.pathsep}{env.get('PATH', '')}",
        # Claude Code: no updater, telemetry or error reports.
        DISABLE_AUTOUPDATER="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_TELEMETRY="1",
        NO_COLOR="1",
    )
    env.update(extra)
    return env


def run_client(
    args: list[str], cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """A client's command line run in `cwd`, its output captured; `env` by default is
    client_env with `cwd` as HOME."""
    return subprocess.run(
        args,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        cwd=cwd,
        env=client_env(cwd) if env is None else env,
    )
