"""The handshake path: `imprint serve` bridges without the store's libraries, the daemon
answers `initialize` while its runtime is still starting, and it loads the embedder in the
background before anyone asks. Behaviour only; the timings are in benchmark/handshake.py."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import pytest

from imprint import daemon as daemon_mod
from imprint.actors.lifecycle import Runtime
from imprint.config import Config
from imprint.daemon import Daemon
from imprint.errors import StoreError
from imprint.launch import plain_serve_allow
from tests.support.wire import initialize_request

pytestmark = pytest.mark.timeout(120)

REPO = Path(__file__).resolve().parents[1]
INITIALIZE = initialize_request("handshake-test")
MODERN = "2026-07-28"
# What the bridge must not import: the store, the embedder, the model, and the libraries of
# the command line, the config schema, logging and MCP (it copies bytes; the daemon speaks MCP).
HEAVY = (
    "chromadb",
    "onnxruntime",
    "llama_cpp",
    "tokenizers",
    "numpy",
    "pykka",
    "mcp",
    "typer",
    "rich",
    "pydantic",
    "structlog",
)


@pytest.fixture
def sockets(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Sockets in a short private folder of this test's own (no XDG_RUNTIME_DIR)."""
    folder = Path(tempfile.mkdtemp(prefix="imp-hs-", dir="/tmp"))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", None)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def started(sockets: Path, tmp_path: Path) -> Iterator[list[Daemon]]:
    """Daemons a test starts; each is shut down and closed after it."""
    daemons: list[Daemon] = []
    yield daemons
    for d in daemons:
        d.shutdown()
        d.close()


def _start(daemons: list[Daemon], data_dir: Path, **kwargs: object) -> Daemon:
    d = Daemon(data_dir, Config(), idle_exit_sec=None, **kwargs)  # type: ignore[arg-type]
    assert d.acquire()
    daemons.append(d)
    d.start()
    threading.Thread(target=d.serve_forever, daemon=True).start()
    return d


@contextlib.contextmanager
def _session(path: Path) -> Iterator[tuple[socket.socket, BinaryIO]]:
    """A session past its hello: the socket and a line reader over it."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(str(path))
        sock.settimeout(60)  # a bound for a failing test, never reached by a passing one
        hello = json.dumps({"cwd": "/", "pid": os.getpid(), "roots": []}) + "\n"
        sock.sendall(hello.encode())
        with sock.makefile("rb") as reader:
            assert json.loads(reader.readline()) == {"ok": True}
            yield sock, reader


@pytest.fixture
def release(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """The MCP SDK's session of every daemon connection waits until this is set."""
    import imprint.server

    event = threading.Event()
    original = imprint.server.serve_lines

    async def held(*args: Any) -> None:
        import anyio

        await anyio.to_thread.run_sync(event.wait, 60)
        await original(*args)

    monkeypatch.setattr(imprint.server, "serve_lines", held)
    return event


def _read_through(reader: BinaryIO, rid: object) -> list[dict[str, Any]]:
    """Every message the daemon sends, up to the reply to request `rid`."""
    seen: list[dict[str, Any]] = []
    while not seen or seen[-1].get("id") != rid:
        line = reader.readline()
        assert line, "the daemon closed the session"
        seen.append(json.loads(line))
    return seen


def _ask(sock: socket.socket, reader: BinaryIO, message: dict[str, Any]) -> dict[str, Any]:
    sock.sendall((json.dumps(message) + "\n").encode())
    return _read_through(reader, message["id"])[-1]


def _modern(rid: object, method: str, protocol: str = MODERN, **params: object) -> dict[str, Any]:
    """A 2026 client's request: its params carry the `_meta` envelope."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": protocol,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "handshake-test", "version": "1"},
    }
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": {"_meta": meta, **params}}


def test_plain_serve_is_recognised_and_everything_else_goes_to_the_full_cli() -> None:
    """Only `serve` with --allow options takes the fast path; --http, --help, a stray
    argument or another command go to typer, which knows how to answer them."""
    assert plain_serve_allow(["serve"]) == []
    assert plain_serve_allow(["serve", "--allow", "/a", "--allow=/b"]) == ["/a", "/b"]
    for argv in (
        [],
        ["serve", "--http"],
        ["serve", "--help"],
        ["serve", "--allow"],
        ["serve", "--allow="],
        ["serve", "--allow", "--http"],
        ["serve", "extra"],
        ["ingest", "."],
        ["daemon"],
    ):
        assert plain_serve_allow(argv) is None, argv


def test_the_installed_serve_command_bridges_without_heavy_imports(
    started: list[Daemon], sockets: Path, tmp_path: Path
) -> None:
    """The `imprint` console script (as pyproject declares it) run as `imprint serve`:
    the client gets its initialize reply through the daemon, and the bridge process never
    imported chromadb, onnxruntime, llama_cpp (nor MCP, typer, pydantic, structlog...)."""
    data_dir = tmp_path / "data"
    _start(started, data_dir, warm_embedder=False)
    entry = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]["imprint"]
    script = textwrap.dedent(
        f"""
        import importlib, json, sys
        module, func = {entry!r}.split(":")
        sys.argv = ["imprint", "serve"]
        try:
            getattr(importlib.import_module(module), func)()
        except SystemExit:
            pass
        heavy = sorted({{m.split(".")[0] for m in sys.modules}} & set({HEAVY!r}))
        sys.stderr.write("HEAVY=" + json.dumps(heavy) + "\\n")
        """
    )
    env = {**os.environ, "IMPRINT_DATA_DIR": str(data_dir), "PYTHONPATH": str(REPO)}
    with subprocess.Popen(
        [sys.executable, "-c", script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        proc.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline() or b"null")
        proc.stdin.close()
        proc.wait(timeout=60)
        err = proc.stderr.read()
    assert reply and reply["result"]["serverInfo"]["name"] == "imprint", err.decode()
    heavy = [line for line in err.decode().splitlines() if line.startswith("HEAVY=")]
    assert heavy == ["HEAVY=[]"], err.decode()


def test_initialize_and_tools_list_are_answered_while_the_runtime_is_still_starting(
    started: list[Daemon], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the runtime's start held back, the daemon answers initialize AND tools/list (all
    17 tools, from its static snapshot); the first tool call waits for the runtime and then
    runs. (Before: tools/list waited for the runtime.)"""
    release = threading.Event()
    original = Runtime.start

    def held(self: Runtime) -> Runtime:
        release.wait(60)
        return original(self)

    monkeypatch.setattr(Runtime, "start", held)
    d = _start(started, tmp_path / "data", warm_embedder=False)
    with _session(d.path) as (sock, reader):
        reply = _ask(sock, reader, INITIALIZE)
        assert reply["result"]["serverInfo"]["name"] == "imprint"
        sock.sendall(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        listed = _ask(sock, reader, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert len(listed["result"]["tools"]) == 17
        assert d.runtime is None and not release.is_set()
        release.set()
        call = {"name": "list_sources", "arguments": {}}
        got = _ask(
            sock, reader, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call}
        )
        assert got["result"]["isError"] is False, got


def test_the_static_handshake_is_what_the_server_answers() -> None:
    """imprint/server/handshake.json (what the daemon answers before MCP's server code is loaded)
    equals what a live session of today's server answers, for every protocol version the SDK
    speaks: `initialize` and tools/list for each that opens with initialize, `server/discover`
    and tools/list for each 2026 one. When it fails: run `python -m imprint.server` and commit."""
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

    from imprint.server import handshake_snapshot, load_handshake

    stored = load_handshake()
    assert stored == handshake_snapshot()
    assert sorted(stored["versions"]) == sorted(HANDSHAKE_PROTOCOL_VERSIONS)
    assert sorted(stored["modern"]) == sorted(MODERN_PROTOCOL_VERSIONS)
    for answers in stored["modern"].values():
        assert sorted(answers) == ["server/discover", "tools/list"]


def test_the_front_answers_before_the_sdk_session_runs_and_then_steps_aside(
    started: list[Daemon], tmp_path: Path, release: threading.Event
) -> None:
    """With the MCP SDK's session held back, initialize (an unknown protocol version gets
    the latest) and tools/list are answered; once it runs, a tool call goes through it and
    the client never sees a second reply to its initialize (the SDK's, to the replay)."""
    d = _start(started, tmp_path / "data", warm_embedder=False)
    init = {**INITIALIZE, "params": {**INITIALIZE["params"], "protocolVersion": "1999-01-01"}}
    with _session(d.path) as (sock, reader):
        reply = _ask(sock, reader, init)
        assert reply["result"]["protocolVersion"] == d.handshake["latest"]  # type: ignore[index]
        sock.sendall(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        listed = _ask(sock, reader, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert [t["name"] for t in listed["result"]["tools"]][:2] == ["search", "get_memory"]
        assert not release.is_set()
        release.set()
        call = {"name": "list_sources", "arguments": {}}
        sock.sendall(
            (
                json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call})
                + "\n"
            ).encode()
        )
        seen = _read_through(reader, 3)
    assert seen[-1]["result"]["isError"] is False, seen[-1]
    assert [m for m in seen if m.get("id") == 1] == []


def test_a_2026_client_is_answered_before_the_sdk_session_runs_and_then_steps_aside(
    started: list[Daemon], tmp_path: Path, release: threading.Event
) -> None:
    """With the MCP SDK's session held back, a 2026 client's server/discover and tools/list
    (each with its `_meta` envelope) get the snapshot's answers, ids echoed. Once it runs,
    the SDK session is in the 2026 era the replayed discover opened (an `initialize` gets
    its refusal), a tool call goes through it, and the client never sees a second reply to
    its discover."""
    d = _start(started, tmp_path / "data", warm_embedder=False)
    served = d.handshake["modern"][MODERN]  # type: ignore[index]
    with _session(d.path) as (sock, reader):
        found = _ask(sock, reader, _modern("d-1", "server/discover"))
        assert found == {"jsonrpc": "2.0", "id": "d-1", "result": served["server/discover"]}
        listed = _ask(sock, reader, _modern(2, "tools/list"))
        assert listed["result"] == served["tools/list"]
        assert len(listed["result"]["tools"]) == 17
        assert not release.is_set()
        release.set()
        refused = _ask(sock, reader, {**INITIALIZE, "id": 3})
        assert refused["error"]["code"] == -32022, refused
        call = {"name": "list_sources", "arguments": {}}
        sock.sendall((json.dumps(_modern(4, "tools/call", **call)) + "\n").encode())
        seen = _read_through(reader, 4)
    assert seen[-1]["result"]["isError"] is False, seen[-1]
    assert [m for m in seen if m.get("id") == "d-1"] == []


def test_an_enveloped_tools_list_in_a_handshake_session_gets_the_sdk_refusal(
    started: list[Daemon], tmp_path: Path
) -> None:
    """After the static `initialize`, a tools/list carrying the 2026 envelope is the SDK's
    to refuse (a handshake session does not take it), not answered from the snapshot.
    (Before: the front answered it with the tool list.)"""
    d = _start(started, tmp_path / "data", warm_embedder=False)
    with _session(d.path) as (sock, reader):
        _ask(sock, reader, INITIALIZE)
        sock.sendall(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        reply = _ask(sock, reader, _modern(2, "tools/list"))
    assert "result" not in reply and reply["error"]["code"] == -32600, reply


@pytest.mark.parametrize(
    ("opening", "code"),
    [
        ({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}, -32602),
        ({"jsonrpc": "2.0", "id": 7, "method": "server/discover"}, -32601),
        (_modern(7, "tools/list", protocol="2027-01-01"), -32022),
        (_modern(7, "server/discover", protocol="2025-11-25"), -32022),
    ],
    ids=["no-handshake-no-envelope", "discover-without-envelope", "unknown-2026", "legacy-2026"],
)
def test_a_session_that_does_not_open_with_initialize_gets_the_sdk_answers(
    started: list[Daemon], tmp_path: Path, opening: dict[str, Any], code: int
) -> None:
    """A session the snapshot cannot open gets what the SDK says to its first request, not
    the static list: a tools/list with neither a handshake nor a 2026 envelope, a
    server/discover without the envelope, an envelope naming a version the snapshot lacks.
    (A 2026 client's own opening is answered from the snapshot: the test above.)"""
    d = _start(started, tmp_path / "data", warm_embedder=False)
    with _session(d.path) as (sock, reader):
        reply = _ask(sock, reader, opening)
    assert "result" not in reply and reply["error"]["code"] == code, reply


def test_a_runtime_that_fails_to_start_is_reported_to_the_session(
    started: list[Daemon], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A start failure in the background (the fact readers failing to start: IMPRINT_FAIL)
    is not lost: a tool call gets an error naming it."""
    monkeypatch.setenv("IMPRINT_FAIL", "readers.start.fact")
    d = _start(started, tmp_path / "data", warm_embedder=False)
    call = {"name": "search", "arguments": {"query": "anything"}}
    with _session(d.path) as (sock, reader):
        _ask(sock, reader, INITIALIZE)
        got = _ask(
            sock, reader, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}
        )
    assert "the store failed to start: failpoint readers.start.fact" in json.dumps(got)
    with pytest.raises(StoreError, match=r"failed to start: failpoint readers\.start\.fact$"):
        d.wait_runtime()


def test_the_daemon_loads_the_embedder_in_the_background(
    started: list[Daemon], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Right after it starts, with no client and no request, the daemon loads the embedder
    (in its warm-up thread), so a client's first search does not pay for it."""
    loaded = threading.Event()
    threads: list[str] = []
    original = Runtime.embedder

    def watched(self: Runtime) -> object:
        threads.append(threading.current_thread().name)
        found = original(self)
        loaded.set()
        return found

    monkeypatch.setattr(Runtime, "embedder", watched)
    d = _start(started, tmp_path / "data")
    assert loaded.wait(90), "the embedder was not loaded without a request"
    assert threads[0] == "imprint-warm"
    assert d.wait_runtime()._embedder is not None


def test_a_daemon_that_dies_before_listening_is_reported_at_once(
    sockets: Path, tmp_path: Path
) -> None:
    """A bad config makes the spawned daemon exit: the bridge says why (the config error
    from the daemon's stderr) as soon as it exits, instead of waiting CONNECT_WAIT_SEC."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "config.toml").write_text("[readers]\npool_size = 0\n")
    with pytest.raises(StoreError, match=r"exited before listening: .*pool_size"):
        daemon_mod.connect(data_dir)
