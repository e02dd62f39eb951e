"""Two stateless team servers (`imprint serve --http --database URL --issuer ISS --resource
RES`, separate processes) on one PostgreSQL, with tokens from a local issuer made here, through
real MCP sessions over streamable HTTP (the SDK's client): each user sees only its own and its
teams' memories through either server, a write acknowledged by one is read by the other at
once, bad tokens are 401, a read-only token cannot write (403 insufficient_scope), and a server
SIGKILLed during writes loses nothing it acknowledged."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

pytest.importorskip("psycopg")

from mcp.client import Client
from mcp.shared.exceptions import MCPError

from tests.support.postgres_support import team_database  # noqa: F401 (a fixture)
from tests.support.team_issuer import Issuer, issuer  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

RES = "http://team.imprint.test/mcp"  # one resource, served by both (as behind a balancer)


class TeamServer:
    """One `imprint serve --http --database` process; started when its ready line is out."""

    def __init__(
        self,
        database: str,
        issuer_url: str,
        home: Path,
        *extra: str,
        env: dict[str, str] | None = None,
    ) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        home.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "IMPRINT_DATA_DIR": str(home), **(env or {})}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "imprint.cli", "serve", "--http",
             *(["--database", database] if database else []),
             *(["--issuer", issuer_url, "--resource", RES] if issuer_url else []),
             "--port", str(self.port), *extra],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,  # the team server writes nothing there
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        self.lines: list[str] = []
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)
            if "imprint: team server at" in line:
                break
        else:
            raise AssertionError(f"team server did not start: {''.join(self.lines)[-2000:]}")
        # The rest of stderr drained, so a chatty server never blocks on a full pipe.
        threading.Thread(target=self._drain, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.port}/mcp"

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)
        if self.proc.stderr is not None:
            self.proc.stderr.close()


@pytest.fixture
def servers(
    team_database: str,  # noqa: F811
    issuer: Issuer,  # noqa: F811
    tmp_path: Path,
) -> Iterator[list[TeamServer]]:
    made: list[TeamServer] = []
    try:
        for n in range(2):
            made.append(TeamServer(team_database, issuer.url, tmp_path / f"server{n}"))
        yield made
    finally:
        for server in made:
            server.stop()


@contextlib.asynccontextmanager
async def _client(url: str, token: str) -> AsyncIterator[Client]:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with (
        create_mcp_http_client({"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


def _text(result: Any) -> str:
    assert not result.is_error, result.content[0].text
    return str(result.content[0].text)


async def _call(url: str, token: str, tool: str, args: dict[str, Any]) -> Any:
    async with _client(url, token) as client:
        return await client.call_tool(tool, args)


def test_tenancy_across_two_servers(servers: list[TeamServer], issuer: Issuer) -> None:  # noqa: F811
    """alice and bob (team core) and carol (no team): each reads its own workspace and its
    teams' through either server, nothing else; a write through one server is read through
    the other at once; naming another's workspace is one line and no data."""
    one, two = servers
    alice = issuer.token("alice", RES, groups=["core"])
    bob = issuer.token("bob", RES, groups=["core"])
    carol = issuer.token("carol", RES)

    async def go() -> None:
        for who, token in (("alice", alice), ("bob", bob), ("carol", carol)):
            stored = _text(
                await _call(one.url, token, "store", {"content": f"{who} private pelican note"})
            )
            assert stored.startswith("stored ") and f"user:{who}" in stored
        shared = _text(
            await _call(
                two.url, alice, "store",
                {"content": "core team decision: the pelican migrates", "workspace": "team:core"},
            )
        )  # fmt: skip
        assert "team:core" in shared
        for server in (one, two):
            for who, token, sees, not_sees in (
                ("alice", alice, ["alice"], ["bob", "carol"]),
                ("bob", bob, ["bob"], ["alice", "carol"]),
                ("carol", carol, ["carol"], ["alice", "bob"]),
            ):
                own = _text(await _call(server.url, token, "search", {"query": "pelican"}))
                for name in sees:
                    assert f"{name} private pelican note" in own, (who, own)
                for name in not_sees:
                    assert f"{name} private" not in own, (who, own)
                assert "core team decision" not in own
            for token in (alice, bob):
                team = _text(
                    await _call(
                        server.url, token, "search", {"query": "pelican", "workspace": "team:core"}
                    )
                )
                assert "core team decision: the pelican migrates" in team
                assert "private" not in team
            refused = await _call(
                server.url, carol, "search", {"query": "pelican", "workspace": "team:core"}
            )
            assert refused.is_error
            line = refused.content[0].text
            assert (
                line.startswith("workspace: 'team:core' is not one of yours") and "\n" not in line
            )
            assert "pelican" not in line.replace("'team:core'", "")
            other = await _call(
                server.url, bob, "search", {"query": "pelican", "workspace": "user:alice"}
            )
            assert other.is_error and "not one of yours" in other.content[0].text
        # Acknowledged by one, read by the other at once (no cache, no session between them).
        for i in range(5):
            stored = _text(await _call(one.url, bob, "store", {"content": f"bob heron {i}"}))
            rid = stored.split()[1]
            got = _text(await _call(two.url, bob, "get_memory", {"id": rid}))
            assert f"bob heron {i}" in got
            missing = await _call(two.url, alice, "get_memory", {"id": rid})
            assert missing.is_error and "no record" in missing.content[0].text

    anyio.run(go)


def test_bad_tokens_are_401_and_a_read_only_token_cannot_write(
    servers: list[TeamServer],
    issuer: Issuer,  # noqa: F811
) -> None:
    """Wrong audience, expired, unknown key, other issuer: 401 with resource_metadata on
    either server; a Host that is neither the resource's nor this server's: 421; a token with
    imprint:read alone reads, and its write is 403 insufficient_scope naming imprint:write,
    with nothing written."""
    bad = {
        "audience": issuer.token("alice", "http://other.test/mcp"),
        "expired": issuer.token("alice", RES, lifetime=-120),
        "unknown key": issuer.token("alice", RES, kid="k9", unpublished_key=True),
        "other issuer": issuer.token("alice", RES, iss="http://evil.test"),
    }
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/list",
        "params": {},
    }
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    for server in servers:
        for case, token in bad.items():
            answer = httpx.post(
                server.url, json=init, headers={**headers, "authorization": f"Bearer {token}"}
            )
            assert answer.status_code == 401, (case, answer.text)
            assert "resource_metadata=" in answer.headers["www-authenticate"], case
    reader = issuer.token("dave", RES, scope="imprint:read")
    writer = issuer.token("dave", RES)
    # A valid token through a page that rebinds another name to this address: 421.
    rebound = httpx.post(
        servers[0].url,
        json=init,
        headers={
            **headers,
            "authorization": f"Bearer {writer}",
            "host": f"evil.test:{servers[0].port}",
        },
    )
    assert rebound.status_code == 421

    async def go() -> None:
        one, two = servers
        _text(await _call(one.url, writer, "store", {"content": "dave kept this gannet"}))
        found = _text(await _call(two.url, reader, "search", {"query": "gannet"}))
        assert "dave kept this gannet" in found
        # The SDK's client meets the 403 (checked on the wire below) as an error response.
        with pytest.raises(Exception) as refused:
            await _call(two.url, reader, "store", {"content": "dave may not write this"})
        assert refused.group_contains(MCPError, match="error response", depth=2)
        after = _text(await _call(one.url, writer, "search", {"query": "write this"}))
        assert "may not write" not in after

    anyio.run(go)
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "store", "arguments": {"content": "dave may not write this"}},
    }
    answer = httpx.post(
        servers[0].url, json=call, headers={**headers, "authorization": f"Bearer {reader}"}
    )
    assert answer.status_code == 403
    challenge = answer.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge and 'scope="imprint:write"' in challenge


def test_a_server_killed_during_writes_loses_nothing_acknowledged(
    servers: list[TeamServer],
    issuer: Issuer,  # noqa: F811
) -> None:
    """Writers store through server one; after some acknowledgements it is SIGKILLed
    mid-stream; every memory it acknowledged reads back through server two."""
    one, two = servers
    token = issuer.token("erin", RES)
    acked: list[str] = []
    enough = anyio.Event()

    killed = threading.Event()

    async def writer(n: int) -> None:
        try:
            async with _client(one.url, token) as client:
                for i in range(1000):
                    result = await client.call_tool("store", {"content": f"erin tern {n}-{i}"})
                    acked.append(_text(result).split()[1])
                    if len(acked) >= 20:
                        enough.set()
        except Exception:
            if not killed.is_set():
                raise
            # The server is gone: what it acknowledged is in `acked`.

    async def go() -> None:
        async with anyio.create_task_group() as tg:
            for n in range(3):
                tg.start_soon(writer, n)
            await enough.wait()
            killed.set()
            one.proc.send_signal(signal.SIGKILL)
        one.proc.wait(timeout=60)
        assert len(acked) >= 20
        async with _client(two.url, token) as client:
            for rid in acked:
                got = await client.call_tool("get_memory", {"id": rid})
                assert not got.is_error, (rid, got.content[0].text)

    anyio.run(go)


def test_the_readme_try_out_a_dev_issuer_and_its_token(
    team_database: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    """`imprint serve --http --database URL --dev-issuer` prints a token for user dev (team
    dev) and a client line; that token stores and searches; the database URL's password is not
    printed."""
    # Trust authentication ignores the password; the server must not print it all the same.
    with_password = team_database.replace("://postgres@", "://postgres:s3cret-word@", 1)
    assert with_password != team_database
    server = TeamServer(with_password, "", tmp_path / "dev", "--dev-issuer")
    try:
        out = "".join(server.lines)
        token = out.split("Authorization: Bearer ", 1)[1].split("'", 1)[0]
        assert f"claude mcp add --transport http imprint {server.url}" in out
        assert "s3cret-word" not in out and "postgres@" not in out

        async def go() -> tuple[str, str]:
            stored = _text(
                await _call(server.url, token, "store", {"content": "dev tried the cormorant"})
            )
            team = _text(
                await _call(
                    server.url, token, "store",
                    {"content": "dev team cormorant", "workspace": "team:dev"},
                )
            )  # fmt: skip
            found = _text(await _call(server.url, token, "search", {"query": "cormorant"}))
            return stored + team, found

        stored, found = anyio.run(go)
        assert "user:dev" in stored and "team:dev" in stored
        assert "dev tried the cormorant" in found and "dev team cormorant" not in found
    finally:
        server.stop()


def test_the_team_keys_configure_the_server(
    team_database: str,  # noqa: F811
    issuer: Issuer,  # noqa: F811
    tmp_path: Path,
) -> None:
    """team.database, team.issuer, team.resource and team.teams_claim (here from the
    environment) serve as the options do: a token whose `teams` claim names core reaches
    team:core; its `groups` claim no longer counts."""
    keys = {
        "IMPRINT_TEAM_DATABASE": team_database,
        "IMPRINT_TEAM_ISSUER": issuer.url,
        "IMPRINT_TEAM_RESOURCE": RES,
        "IMPRINT_TEAM_TEAMS_CLAIM": "teams",
    }
    server = TeamServer("", "", tmp_path / "keys", env=keys)
    try:
        by_teams = issuer.token("frank", RES, extra={"teams": ["core"]})
        by_groups = issuer.token("frank", RES, groups=["core"])

        async def go() -> tuple[Any, Any]:
            args = {"content": "frank's core note on the skua", "workspace": "team:core"}
            return (
                await _call(server.url, by_teams, "store", args),
                await _call(server.url, by_groups, "store", args),
            )

        allowed, refused = anyio.run(go)
        assert "team:core" in _text(allowed)
        assert refused.is_error and "not one of yours" in refused.content[0].text
    finally:
        server.stop()


def test_the_database_restarted_under_load_loses_nothing_acknowledged(
    issuer: Issuer,  # noqa: F811
) -> None:
    """Two servers take writes while their PostgreSQL is stopped as by a crash (immediate)
    and started again: during the outage a call is one error line, after it both servers
    write again without being restarted, and every write either acknowledged reads back."""
    import shutil
    import tempfile

    from imprint.store.postgres.local import LocalPostgres

    folder = Path(tempfile.mkdtemp(prefix="imprint-pg-restart-"))
    database = LocalPostgres(folder)
    made: list[TeamServer] = []
    try:
        url = database.start()
        made = [TeamServer(url, issuer.url, folder / f"home{n}") for n in range(2)]
        token = issuer.token("gwen", RES)
        acked: list[str] = []
        after: list[int] = [0, 0]  # acknowledgements per server since the restart
        failures: list[str] = []
        enough = anyio.Event()
        restarted = anyio.Event()

        async def writer(n: int) -> None:
            async with _client(made[n].url, token) as client:
                for i in range(5000):
                    if after[n] >= 10:
                        return
                    result = await client.call_tool("store", {"content": f"gwen auk {n}-{i}"})
                    if result.is_error:
                        failures.append(result.content[0].text)
                        continue
                    acked.append(_text(result).split()[1])
                    if restarted.is_set():
                        after[n] += 1
                    elif len(acked) >= 20:
                        enough.set()

        def restart() -> None:
            database.stop("immediate")
            database.start()

        async def go() -> None:
            async with anyio.create_task_group() as tg:
                tg.start_soon(writer, 0)
                tg.start_soon(writer, 1)
                await enough.wait()
                await anyio.to_thread.run_sync(restart)
                restarted.set()
            async with _client(made[1].url, token) as client:
                for rid in acked:
                    got = await client.call_tool("get_memory", {"id": rid})
                    assert not got.is_error, (rid, got.content[0].text)

        anyio.run(go)
        assert after == [10, 10]
        for line in failures:
            assert line.startswith("the team database (PostgreSQL) failed") and "\n" not in line
    finally:
        for server in made:
            server.stop()
        try:
            database.stop("immediate")
        finally:
            shutil.rmtree(folder, ignore_errors=True)
