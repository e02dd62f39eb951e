"""`imprint config set` while the data dir's owner runs: it says when the value takes
effect, and `--restart` restarts the daemon with every acknowledged write kept."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from tests.integration.conftest import daemon_pid, http_server, owner_env

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def _tools(data_dir: Path, *calls: tuple[str, dict[str, object]]) -> list[str]:
    """Each call's text, in one stdio session (`imprint serve`, bridged to the owner)."""
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "imprint.cli", "serve"],
        env=owner_env(data_dir),
        cwd=str(data_dir.parent),
    )

    async def go() -> list[str]:
        texts = []
        async with Client(server) as client:
            for name, args in calls:
                result = await client.call_tool(name, args)
                assert not result.is_error, result.content
                texts.append(str(result.content[0].text))  # type: ignore[union-attr]
        return texts

    return anyio.run(go)


def _config_set(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "imprint.cli", "config", "set", *args],
        env=owner_env(data_dir),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _threads(data_dir: Path) -> str:
    (context,) = _tools(data_dir, ("device_context", {}))
    (line,) = [line for line in context.splitlines() if "threads" in line]
    return line


def test_config_set_names_the_restart_and_restart_applies_it_keeping_writes(
    data_dir: Path,
) -> None:
    """With the daemon running, `config set embedding.threads 1` prints the value and says
    it takes effect after a restart (the daemon still uses the old value); a live key says
    the dashboard applies it at once; `--restart` gives a new daemon that uses the value
    and still holds the memory stored before."""
    stored, _ = _tools(
        data_dir,
        ("store", {"content": "the restart kept the avocet"}),
        ("device_context", {}),
    )
    memory = stored.removeprefix("stored ")
    before, pid = _threads(data_dir), daemon_pid(data_dir)
    assert pid is not None and "1 threads" not in before

    plain = _config_set(data_dir, "embedding.threads", "1")
    assert (plain.returncode, plain.stdout) == (0, "embedding.threads = 1\n"), plain.stderr
    assert plain.stderr == (
        "imprint: embedding.threads takes effect after a restart: imprint stop (the next "
        "client starts the daemon again), or imprint config set --restart\n"
    )
    assert daemon_pid(data_dir) == pid and _threads(data_dir) == before

    live = _config_set(data_dir, "recall.llm_timeout_sec", "20")
    assert live.returncode == 0 and live.stdout == "recall.llm_timeout_sec = 20.0\n"
    assert f"the running daemon (process {pid}) keeps its recall.llm_timeout_sec" in live.stderr
    assert "the dashboard's Settings page applies it at once" in live.stderr

    restarted = _config_set(data_dir, "--restart", "embedding.threads", "1")
    assert restarted.returncode == 0, restarted.stderr
    new_pid = daemon_pid(data_dir)
    assert new_pid is not None and new_pid != pid
    assert f"restarted the daemon (process {pid} -> {new_pid})" in restarted.stderr
    assert "1 threads" in _threads(data_dir)
    (found,) = _tools(data_dir, ("get_memory", {"id": memory}))
    assert "the restart kept the avocet" in found


def test_config_set_restart_leaves_a_serve_http_running_and_says_so(
    data_dir: Path, tmp_path: Path
) -> None:
    """`serve --http` was started by hand: `config set --restart` stores the value, does
    not stop that server (it could not start it again), says how to restart it, exits 1."""
    with http_server(data_dir, tmp_path) as (proc, _port):
        answer = _config_set(data_dir, "--restart", "ingest.allow_private_urls", "true")
        assert answer.returncode == 1
        assert answer.stdout == "ingest.allow_private_urls = True\n"
        assert answer.stderr == (
            f"imprint: ingest.allow_private_urls takes effect after a restart: serve --http "
            f"(process {proc.pid}) keeps the old value until you stop it (imprint stop) and "
            "start it again\n"
        )
        assert proc.poll() is None and daemon_pid(data_dir) == proc.pid
