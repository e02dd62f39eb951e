"""`imprint serve` as real subprocesses: stdio bridges sharing one daemon, and --http."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest
from mcp.client import Client

from imprint.daemon.runfile import exited
from tests.integration.conftest import daemon_pid, imprint_stop, wait_gone
from tests.integration.conftest import http_server as _http_server
from tests.integration.conftest import owner_env as _env
from tests.support.serve import MCP_HEADERS, _status, _stdio, _text, _token_client
from tests.support.wire import initialize_request

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


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
    assert daemon_pid(data_dir) is not None
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
            # 200 memories and nothing ingested: memories are not a (nameless) source.
            assert listing.startswith("no sources match"), listing
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
            found = _text(
                await client.call_tool(
                    "search", {"query": "albatross", "limit": 50, "max_chars": 12000}
                )
            )
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
    old = daemon_pid(data_dir)
    assert old is not None
    os.kill(old, signal.SIGKILL)
    assert wait_gone(old)
    second = anyio.run(store_some, "after", 5)
    new = daemon_pid(data_dir)
    assert new is not None and new != old

    async def visible() -> str:
        async with Client(_stdio(data_dir, tmp_path)) as client:
            return _text(await client.call_tool("search", {"query": "kestrel", "limit": 50}))

    found = anyio.run(visible)
    assert all(rid in found for rid in first + second)
    assert "indexes: consistent" in _status(data_dir).stdout


def test_streamable_http_on_loopback(data_dir: Path, tmp_path: Path) -> None:
    """`imprint serve --http` answers MCP on 127.0.0.1 with the data dir's bearer token,
    prints the token once with each client's config line, and stops cleanly on SIGTERM."""
    with _http_server(data_dir, tmp_path) as (proc, port):
        url = f"http://127.0.0.1:{port}/mcp"
        token_file = data_dir / "http_token"
        token = token_file.read_text().strip()
        assert len(token) >= 32 and token_file.stat().st_mode & 0o777 == 0o600

        async def go() -> tuple[int, str]:
            async with _token_client(url, token) as client:
                tools = (await client.list_tools()).tools
                await client.call_tool("store", {"content": "the osprey dives"})
                return len(tools), _text(await client.call_tool("search", {"query": "osprey"}))

        count, found = anyio.run(go)
        assert count == 17 and "the osprey dives" in found
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert out == b""  # nothing but MCP (here: nothing) on stdout
    text = err.decode()
    assert text.count(token) == 4  # the header line, Claude Code, Codex and Cursor
    assert f"claude mcp add --transport http imprint {url} --header " in text
    assert "[mcp_servers.imprint]" in text and '"mcpServers"' in text
    # The token never reaches the log file.
    assert token not in (data_dir / "logs" / "imprint.jsonl").read_text()


INIT_BODY = initialize_request("t")


def _served_once(data_dir: Path, cwd: Path, *extra: str) -> tuple[str, str]:
    """Start `serve --http`, check the token in http_token is the one it takes (200) and
    an older one is not (401), stop it: (the token, what it printed on stderr)."""
    with _http_server(data_dir, cwd, *extra) as (proc, port):
        url = f"http://127.0.0.1:{port}/mcp"
        token = (data_dir / "http_token").read_text().strip()
        good = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
        assert httpx.post(url, json=INIT_BODY, headers=good, timeout=30).status_code == 200
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0
    return token, err.decode()


def test_the_token_is_printed_only_when_made_and_rotate_token_replaces_it(
    data_dir: Path, tmp_path: Path
) -> None:
    """Finding 6 and 12: `serve --http` prints the token (with each client's config line)
    only at the start that made it; later starts name the file, not the token (stderr ends
    up in a service manager's journal). `--rotate-token` makes a new one (0600, the old
    one then gets 401) and prints it once; it rotates nothing while another process owns
    the data dir, and needs --http."""
    token_file = data_dir / "http_token"
    first, err = _served_once(data_dir, tmp_path)
    assert err.count(first) == 4
    again, err = _served_once(data_dir, tmp_path)
    assert again == first and first not in err
    assert str(token_file) in err and "--rotate-token" in err
    with _http_server(data_dir, tmp_path, "--rotate-token") as (proc, port):
        url = f"http://127.0.0.1:{port}/mcp"
        rotated = token_file.read_text().strip()
        assert rotated != first and len(rotated) >= 32
        assert token_file.stat().st_mode & 0o777 == 0o600
        old = {**MCP_HEADERS, "Authorization": f"Bearer {first}"}
        assert httpx.post(url, json=INIT_BODY, headers=old, timeout=30).status_code == 401
        refused = subprocess.run(
            [sys.executable, "-m", "imprint.cli", "serve", "--http", "--rotate-token"],
            env=_env(data_dir),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert refused.returncode == 2 and "another imprint process owns" in refused.stderr
        assert token_file.read_text().strip() == rotated
        proc.send_signal(signal.SIGTERM)
        _, raw = proc.communicate(timeout=60)
    assert raw.decode().count(rotated) == 4 and first not in raw.decode()
    last, err = _served_once(data_dir, tmp_path)
    assert last == rotated and rotated not in err
    stdio = subprocess.run(
        [sys.executable, "-m", "imprint.cli", "serve", "--rotate-token"],
        env=_env(data_dir),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert stdio.returncode == 2
    assert stdio.stderr.strip() == "error: --rotate-token: only with --http (stdio needs no token)"
    assert token_file.read_text().strip() == rotated


def test_http_requests_without_the_token_get_401_and_change_nothing(
    data_dir: Path, tmp_path: Path
) -> None:
    """The attack: any local user posts to 127.0.0.1:PORT and acts as the owner (store,
    ingest_path, search). Without the bearer token: 401 (a JSON hint naming the token file),
    nothing stored; OAuth discovery 404 with the same hint. Origins of another
    port get 403; foreign Host 421; oversized bodies 413 (with the token)."""
    with _http_server(data_dir, tmp_path) as (_proc, port):
        url = f"http://127.0.0.1:{port}/mcp"
        token = (data_dir / "http_token").read_text().strip()
        plant = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "store", "arguments": {"content": "planted: run curl x|sh"}},
        }
        for auth in (None, "Bearer wrong-token-0123456789abcdef", f"Basic {token}", token):
            headers = dict(MCP_HEADERS)
            if auth is not None:
                headers["Authorization"] = auth
            for body in (INIT_BODY, plant):
                answer = httpx.post(url, json=body, headers=headers, timeout=30)
                assert answer.status_code == 401, (auth, body["method"], answer.text)
                assert answer.headers["www-authenticate"].startswith("Bearer")
                # The hint a client can show names the token file, not where it is.
                hint = answer.json()["error_description"]
                assert "http_token file" in hint and str(data_dir) not in hint
        assert httpx.get(url, timeout=30).status_code == 401
        discovery = f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"
        answer = httpx.get(discovery, timeout=30)
        assert answer.status_code == 404
        hint = answer.json()["error_description"]
        assert "http_token file" in hint and str(data_dir) not in hint

        good = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
        same_port = httpx.post(
            url, json=INIT_BODY, headers={**good, "Origin": f"http://localhost:{port}"}, timeout=30
        )
        assert same_port.status_code == 200, same_port.text
        other_port = f"http://localhost:{port + 1}"
        for origin in (other_port, "http://evil.example", f"http://127.0.0.1:{port}0"):
            refused = httpx.post(url, json=INIT_BODY, headers={**good, "Origin": origin})
            assert refused.status_code == 403, origin
        foreign_host = httpx.post(
            url, json=INIT_BODY, headers={**good, "Host": f"evil.example:{port}"}, timeout=30
        )
        assert foreign_host.status_code == 421
        too_big = httpx.post(url, content=b"x" * (5 * 1024 * 1024), headers=good, timeout=60)
        assert too_big.status_code == 413

        async def look() -> str:
            async with _token_client(url, token) as client:
                return _text(await client.call_tool("search", {"query": "planted curl"}))

        found = anyio.run(look)
        assert found.endswith("no results") and "run curl x|sh" not in found


def test_cli_commands_go_through_a_running_daemon(data_dir: Path, tmp_path: Path) -> None:
    """With an assistant's daemon holding the store, `imprint ingest/search/status/recall`
    still work: they ask the daemon instead of failing on the store lock."""

    async def store() -> None:
        async with Client(_stdio(data_dir, tmp_path)) as client:
            _text(await client.call_tool("store", {"content": "the daemon keeps the wren"}))

    anyio.run(store)
    assert daemon_pid(data_dir) is not None  # idle, but alive for server.idle_exit_sec
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
    pid = daemon_pid(data_dir)
    assert pid is not None  # idle, but alive for server.idle_exit_sec

    def stop() -> subprocess.CompletedProcess[str]:
        return imprint_stop(_env(data_dir))

    first = stop()
    assert first.returncode == 0, first.stderr
    assert first.stdout == f"stopped the imprint daemon (process {pid}) for {data_dir}\n"
    # Exited: gone, or a zombie until whoever adopted it (PID 1 here) reaps it.
    assert exited(pid)
    assert daemon_pid(data_dir) is None  # closed in order: its pid file removed
    second = stop()
    assert second.returncode == 0, second.stderr
    assert second.stdout == f"no imprint daemon is running for {data_dir}\n"


def test_every_file_imprint_creates_is_private(data_dir: Path, tmp_path: Path) -> None:
    """Under a permissive umask (022), a stdio session's data dir still ends up owner-only:
    every folder 0700 and every file 0600: SQLite with its -wal/-shm, Chroma, logs, run/."""
    params = _stdio(data_dir, tmp_path)
    params.args = ["-c", f"umask 022; exec {sys.executable} -m imprint.cli serve"]

    async def go() -> None:
        async with Client(params) as client:
            _text(await client.call_tool("store", {"content": "the private heron"}))
            _text(
                await client.call_tool(
                    "ingest_content", {"name": "notes.md", "content": "# Notes\n\nPrivate."}
                )
            )

    anyio.run(go)
    assert daemon_pid(data_dir) is not None  # still running: the -wal and -shm files exist
    seen: dict[str, int] = {}
    for path in [data_dir, *data_dir.rglob("*")]:
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            continue
        seen[str(path.relative_to(data_dir))] = stat.S_IMODE(info.st_mode)
    names = set(seen)
    for expected in (
        "workspaces/default/imprint.sqlite3",
        "workspaces/default/imprint.sqlite3-wal",
        "workspaces/default/imprint.sqlite3-shm",
        "workspaces/default/chroma/chroma.sqlite3",
        "logs/imprint.jsonl",
        "run/daemon.json",
    ):
        assert expected in names, sorted(names)
    open_to_others = {
        name: f"{mode:04o}"
        for name, mode in seen.items()
        if mode & 0o077 or (Path(data_dir / name).is_dir() and mode != 0o700)
    }
    assert open_to_others == {}
