"""The real coding agents' CLIs (the versions scripts/node pins) connect to Imprint over stdio
and over streamable HTTP with the bearer header, each with a scratch home and project folder,
nothing configured beyond the two servers, and no traffic beyond loopback."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from tests.integration.conftest import http_server
from tests.support.node_clients import client, client_env, run_client

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture
def served(data_dir: Path, tmp_path: Path) -> Iterator[tuple[Path, str, str]]:
    """`serve --http` owning `data_dir` (stdio clients' `imprint serve` bridges to it): the
    data dir, its URL and its token."""
    with http_server(data_dir, tmp_path) as (_proc, port):
        token = (data_dir / "http_token").read_text().strip()
        yield data_dir, f"http://127.0.0.1:{port}/mcp", token


def _folders(tmp_path: Path) -> tuple[Path, Path]:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    return home, project


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    proc = run_client(args, cwd, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def _connected(listing: str, name: str) -> bool:
    """Whether `mcp list` reports the server `name` connected."""
    lines = [line for line in listing.splitlines() if line.lstrip("✓✔○✗ ").startswith(name + ":")]
    return len(lines) == 1 and lines[0].rstrip().endswith("Connected")


def test_claude_code_lists_both_transports_connected(
    served: tuple[Path, str, str], tmp_path: Path
) -> None:
    """`claude mcp add` for stdio and for HTTP with the header, then `claude mcp list`
    (which connects to each) reports both connected."""
    data_dir, url, token = served
    claude = client("@anthropic-ai/claude-code")
    home, project = _folders(tmp_path)
    env = client_env(home)
    serve = [sys.executable, "-m", "imprint.cli", "serve"]
    add = [claude, "mcp", "add", "--scope", "user"]
    _run([*add, "imprint-stdio", "-e", f"IMPRINT_DATA_DIR={data_dir}", "--", *serve], project, env)
    header = f"Authorization: Bearer {token}"
    _run([*add, "--transport", "http", "imprint-http", url, "--header", header], project, env)
    listing = _run([claude, "mcp", "list"], project, env).stdout
    assert _connected(listing, "imprint-stdio"), listing
    assert _connected(listing, "imprint-http"), listing


def test_gemini_cli_lists_both_transports_connected_in_a_trusted_folder(
    served: tuple[Path, str, str], tmp_path: Path
) -> None:
    """Gemini CLI reads the two servers from a trusted project folder's settings and
    `gemini mcp list` reports both connected (untrusted, it would list them disabled)."""
    data_dir, url, token = served
    gemini = client("@google/gemini-cli")
    home, project = _folders(tmp_path)
    (home / ".gemini").mkdir()
    trusted = {str(project.resolve()): "TRUST_FOLDER"}
    (home / ".gemini" / "trustedFolders.json").write_text(json.dumps(trusted))
    (home / ".gemini" / "settings.json").write_text(
        json.dumps({"privacy": {"usageStatisticsEnabled": False}})
    )
    servers = {
        "imprint-stdio": {
            "command": sys.executable,
            "args": ["-m", "imprint.cli", "serve"],
            "env": {"IMPRINT_DATA_DIR": str(data_dir)},
        },
        "imprint-http": {"httpUrl": url, "headers": {"Authorization": f"Bearer {token}"}},
    }
    (project / ".gemini").mkdir()
    (project / ".gemini" / "settings.json").write_text(json.dumps({"mcpServers": servers}))
    listed = _run([gemini, "mcp", "list"], project, client_env(home))
    listing = listed.stdout + listed.stderr  # its listing goes to stderr
    assert _connected(listing, "imprint-stdio"), listing
    assert _connected(listing, "imprint-http"), listing


class _AppServer:
    """`codex app-server` over stdio: one JSON-RPC message a line."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.next_id = 0

    def _write(self, message: dict[str, Any]) -> None:
        stdin: IO[str] | None = self.proc.stdin
        assert stdin is not None
        stdin.write(json.dumps(message) + "\n")
        stdin.flush()

    def notify(self, method: str) -> None:
        self._write({"method": method})

    def ask(self, method: str, params: dict[str, Any]) -> Any:
        """The result of one request; notifications and server requests in between are
        passed over (the pytest timeout bounds a server that never answers)."""
        self.next_id += 1
        self._write({"method": method, "id": self.next_id, "params": params})
        stdout: IO[str] | None = self.proc.stdout
        assert stdout is not None
        for line in stdout:
            message = json.loads(line)
            if message.get("id") == self.next_id and "method" not in message:
                assert "error" not in message, (method, message)
                return message["result"]
        raise AssertionError(f"codex app-server closed before answering {method}")


def test_codex_app_server_lists_the_tools_and_calls_search_over_both_transports(
    served: tuple[Path, str, str], tmp_path: Path
) -> None:
    """`codex app-server` lists the 17 tools of each server, stores a memory over stdio and
    finds it with `search` over stdio and over HTTP (the token from bearer_token_env_var);
    its model provider points at a closed loopback port, so nothing leaves the machine."""
    data_dir, url, token = served
    codex = client("@openai/codex")
    home, project = _folders(tmp_path)
    codex_home = home / ".codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(
        'model_provider = "loopback"\n'
        "check_for_update_on_startup = false\n"
        "[model_providers.loopback]\n"
        'name = "loopback"\nbase_url = "http://127.0.0.1:9/v1"\nwire_api = "responses"\n'
        "[mcp_servers.imprint_stdio]\n"
        f"command = {json.dumps(sys.executable)}\n"
        'args = ["-m", "imprint.cli", "serve"]\n'
        f"env = {{ IMPRINT_DATA_DIR = {json.dumps(str(data_dir))} }}\n"
        "[mcp_servers.imprint_http]\n"
        f"url = {json.dumps(url)}\n"
        'bearer_token_env_var = "IMPRINT_HTTP_TOKEN"\n'
    )
    env = client_env(home, CODEX_HOME=str(codex_home), IMPRINT_HTTP_TOKEN=token)
    with (
        (tmp_path / "codex.stderr").open("w") as errors,
        subprocess.Popen(
            [codex, "app-server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            cwd=project,
            env=env,
        ) as proc,
    ):
        app = _AppServer(proc)
        app.ask("initialize", {"clientInfo": {"name": "imprint-tests", "version": "1"}})
        app.notify("initialized")
        servers = {s["name"]: s for s in app.ask("mcpServerStatus/list", {})["data"]}
        for name in ("imprint_stdio", "imprint_http"):
            assert len(servers[name]["tools"]) == 17 and "search" in servers[name]["tools"]
        thread = app.ask("thread/start", {"cwd": str(project), "ephemeral": True})
        tid = thread["thread"]["id"]

        def call(server: str, tool: str, arguments: dict[str, Any]) -> str:
            params = {"server": server, "threadId": tid, "tool": tool, "arguments": arguments}
            result = app.ask("mcpServer/tool/call", params)
            assert result["isError"] is False, result
            return "".join(c.get("text", "") for c in result["content"])

        bird = "codex saw a bittern in the reeds"
        assert call("imprint_stdio", "store", {"content": bird}).startswith("stored ")
        for server in ("imprint_stdio", "imprint_http"):
            assert bird in call(server, "search", {"query": "bittern reeds"}), server
        # End of input: the app server stops (leaving the with-block waits for it).
        assert proc.stdin is not None
        proc.stdin.close()
