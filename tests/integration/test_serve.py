"""`imprint serve` as real subprocesses: stdio bridges sharing one daemon, and --http."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def _env(data_dir: Path) -> dict[str, str]:
    return {
        **os.environ,
        "IMPRINT_DATA_DIR": str(data_dir),
        # A daemon a failed teardown leaves behind still goes away by itself.
        "IMPRINT_SERVER_IDLE_EXIT_SEC": "60",
    }


def _stdio(data_dir: Path, cwd: Path, pidfile: Path | None = None) -> StdioServerParameters:
    command = f"{sys.executable} -m imprint.cli serve"
    if pidfile is not None:
        # exec keeps the shell's pid, so the test knows which process to kill.
        command = f"echo $$ > {pidfile}; exec {command}"
    return StdioServerParameters(
        command="/bin/sh", args=["-c", command], env=_env(data_dir), cwd=str(cwd)
    )


def _daemon_pid(data_dir: Path) -> int | None:
    info = data_dir / "run" / "daemon.json"
    if not info.exists():
        return None
    return int(json.loads(info.read_text())["pid"])


def _wait_gone(pid: int, seconds: float = 60) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)  # waiting for another process to exit; nothing to wait on
    return False


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "data"
    try:
        yield path
    finally:
        pid = _daemon_pid(path)
        if pid is not None:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            else:
                assert _wait_gone(pid), "the daemon did not stop on SIGTERM"


def _text(result: Any) -> str:
    assert not result.is_error, result.content[0].text
    return str(result.content[0].text)


def _status(data_dir: Path) -> subprocess.CompletedProcess[str]:
    """`imprint status` through its own stdio session (the daemon owns the store)."""

    async def go() -> str:
        async with Client(_stdio(data_dir, data_dir.parent)) as client:
            return _text(await client.call_tool("status", {}))

    return subprocess.CompletedProcess([], 0, anyio.run(go), "")


def test_stdio_subprocess_serves_the_seventeen_tools(data_dir: Path, tmp_path: Path) -> None:
    """A real `imprint serve` subprocess: 17 tools, store then search, logs off stdout."""

    async def go() -> tuple[int, str, str]:
        async with Client(_stdio(data_dir, tmp_path)) as client:
            tools = (await client.list_tools()).tools
            stored = _text(await client.call_tool("store", {"content": "the heron nests"}))
            found = _text(await client.call_tool("search", {"query": "heron"}))
            return len(tools), stored, found

    count, stored, found = anyio.run(go)
    assert count == 17
    assert stored.startswith("stored ") and stored.removeprefix("stored ") in found
    assert _daemon_pid(data_dir) is not None
    assert (data_dir / "logs" / "imprint.jsonl").stat().st_size > 0


def test_four_stdio_servers_share_one_data_dir(data_dir: Path, tmp_path: Path) -> None:
    """4 servers each store and search 50 memories; every memory is visible from each."""
    per_server = 50

    async def worker(n: int, stored: dict[int, list[str]]) -> None:
        async with Client(_stdio(data_dir, tmp_path)) as client:
            ids = []
            for i in range(per_server):
                text = f"server {n} memory {i}: the quokka number {n * 1000 + i}"
                ids.append(_text(await client.call_tool("store", {"content": text})).split()[1])
                if i % 10 == 0:
                    await client.call_tool("search", {"query": f"quokka {n}", "limit": 5})
            stored[n] = ids

    async def check(ids: list[str]) -> list[int]:
        missing = []
        async with Client(_stdio(data_dir, tmp_path)) as client:
            for rid in ids:
                if (await client.call_tool("get_memory", {"id": rid})).is_error:
                    missing.append(1)
            listing = _text(await client.call_tool("list_sources", {"limit": 200}))
            assert listing.startswith("1 sources")  # 200 memories, one (inline) source
        return missing

    async def go() -> tuple[dict[int, list[str]], list[list[int]]]:
        stored: dict[int, list[str]] = {}
        async with anyio.create_task_group() as tg:
            for n in range(4):
                tg.start_soon(worker, n, stored)
        all_ids = [rid for ids in stored.values() for rid in ids]
        results: list[list[int]] = [[] for _ in range(4)]

        async def one(k: int) -> None:
            results[k] = await check(all_ids)

        async with anyio.create_task_group() as tg:
            for k in range(4):
                tg.start_soon(one, k)
        return stored, results

    stored, missing = anyio.run(go)
    assert sum(len(v) for v in stored.values()) == 200
    assert len({rid for ids in stored.values() for rid in ids}) == 200
    assert missing == [[], [], [], []]
    status = _status(data_dir).stdout
    assert "200 records" in status and "indexes: consistent" in status


def test_a_server_killed_mid_write_leaves_the_others_working(
    data_dir: Path, tmp_path: Path
) -> None:
    """SIGKILL one stdio server while its write is in flight; the others go on, nothing breaks."""
    pidfile = tmp_path / "victim.pid"
    big = "\n\n".join(f"## Part {i}\n\n" + "lorem ipsum dolor " * 60 for i in range(40))

    async def victim(started: anyio.Event) -> None:
        try:
            async with Client(_stdio(data_dir, tmp_path, pidfile)) as client:
                started.set()
                await client.call_tool("ingest_content", {"name": "big.md", "content": big})
        except Exception:
            pass  # its server was killed under it: exactly what this test does

    async def survivor(n: int) -> list[str]:
        ids = []
        async with Client(_stdio(data_dir, tmp_path)) as client:
            for i in range(20):
                text = f"survivor {n} note {i} about the albatross"
                ids.append(_text(await client.call_tool("store", {"content": text})).split()[1])
            found = _text(await client.call_tool("search", {"query": "albatross", "limit": 50}))
            assert all(rid in found for rid in ids[-5:])
        return ids

    async def go() -> list[list[str]]:
        started = anyio.Event()
        out: list[list[str]] = [[], []]

        async def run_survivor(n: int) -> None:
            out[n] = await survivor(n)

        async with anyio.create_task_group() as tg:
            tg.start_soon(victim, started)
            await started.wait()
            tg.start_soon(run_survivor, 0)
            tg.start_soon(run_survivor, 1)
            with anyio.fail_after(60):
                while not pidfile.exists():
                    await anyio.sleep(0.05)
            await anyio.sleep(0.5)  # let the ingest reach the daemon before the kill
            os.kill(int(pidfile.read_text()), signal.SIGKILL)
        return out

    ids = anyio.run(go)
    assert len(ids[0]) == len(ids[1]) == 20
    status = _status(data_dir).stdout
    assert "indexes: consistent" in status


def test_a_killed_daemon_is_replaced_and_recovers(data_dir: Path, tmp_path: Path) -> None:
    """SIGKILL the owner daemon; the next serve starts a new one and every ack survives."""

    async def store_some(prefix: str, n: int) -> list[str]:
        async with Client(_stdio(data_dir, tmp_path)) as client:
            return [
                _text(
                    await client.call_tool("store", {"content": f"{prefix} {i} kestrel"})
                ).split()[1]
                for i in range(n)
            ]

    first = anyio.run(store_some, "before", 10)
    old = _daemon_pid(data_dir)
    assert old is not None
    os.kill(old, signal.SIGKILL)
    assert _wait_gone(old)
    second = anyio.run(store_some, "after", 5)
    new = _daemon_pid(data_dir)
    assert new is not None and new != old

    async def visible() -> str:
        async with Client(_stdio(data_dir, tmp_path)) as client:
            return _text(await client.call_tool("search", {"query": "kestrel", "limit": 50}))

    found = anyio.run(visible)
    assert all(rid in found for rid in first + second)
    assert "indexes: consistent" in _status(data_dir).stdout


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_streamable_http_on_loopback(data_dir: Path, tmp_path: Path) -> None:
    """`imprint serve --http` answers MCP on 127.0.0.1 and stops cleanly on SIGTERM."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "imprint.cli", "serve", "--http", "--port", str(port)],
        env=_env(data_dir),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.TransportError as exc:
                if proc.poll() is not None or time.monotonic() > deadline:
                    err = proc.stderr.read().decode() if proc.stderr else ""
                    raise AssertionError(err) from exc
                time.sleep(0.1)  # polling a starting server; nothing to wait on

        async def go() -> tuple[int, str]:
            async with Client(url) as client:
                tools = (await client.list_tools()).tools
                await client.call_tool("store", {"content": "the osprey dives"})
                return len(tools), _text(await client.call_tool("search", {"query": "osprey"}))

        count, found = anyio.run(go)
        assert count == 17 and "the osprey dives" in found
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert out == b""  # nothing but MCP (here: nothing) on stdout


def test_cli_commands_go_through_a_running_daemon(data_dir: Path, tmp_path: Path) -> None:
    """With an assistant's daemon holding the store, `imprint ingest/search/status/recall`
    still work: they ask the daemon instead of failing on the store lock."""

    async def store() -> None:
        async with Client(_stdio(data_dir, tmp_path)) as client:
            _text(await client.call_tool("store", {"content": "the daemon keeps the wren"}))

    anyio.run(store)
    assert _daemon_pid(data_dir) is not None  # idle, but alive for server.idle_exit_sec
    folder = tmp_path / "elsewhere"
    (folder / "docs").mkdir(parents=True)
    (folder / "docs" / "owl.md").write_text("# Owls\n\nThe barn owl hunts at dusk.\n")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "imprint.cli", *args],
            env=_env(data_dir),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )

    ingested = cli("ingest", str(folder), "--project", "birds")
    assert ingested.returncode == 0, ingested.stderr
    assert ingested.stdout.startswith("ingested 1 files (1 chunks) into project 'birds'")
    found = cli("search", "barn owl dusk", "--max-chars", "1200")
    assert found.returncode == 0 and "| birds | docs/owl.md#0 |" in found.stdout
    wren = cli("recall", "wren", "--plan", '[{"tool": "search", "args": {"query": "wren"}}]')
    assert wren.returncode == 0 and "the daemon keeps the wren" in wren.stdout
    status = cli("status")
    assert status.returncode == 0 and "indexes: consistent" in status.stdout
    bad = cli("search", "x", "--mode", "fuzzy")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert bad.stderr.startswith("error: mode: 'fuzzy' is not allowed; ")


def test_imprint_stop_stops_the_shared_daemon(data_dir: Path, tmp_path: Path) -> None:
    """`imprint stop` ends an idle daemon and waits until it has exited; again, it says none."""

    async def go() -> None:
        async with Client(_stdio(data_dir, tmp_path)) as client:
            _text(await client.call_tool("store", {"content": "the daemon keeps the wren"}))

    anyio.run(go)
    pid = _daemon_pid(data_dir)
    assert pid is not None  # idle, but alive for server.idle_exit_sec

    def stop() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "imprint.cli", "stop"],
            env=_env(data_dir),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    first = stop()
    assert first.returncode == 0, first.stderr
    assert first.stdout == f"stopped the imprint daemon (process {pid}) for {data_dir}\n"
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert _daemon_pid(data_dir) is None  # closed in order: its pid file removed
    second = stop()
    assert second.returncode == 0, second.stderr
    assert second.stdout == f"no imprint daemon is running for {data_dir}\n"
