"""Real processes on bad input and damaged files (issue 26, findings 8 and 9): the CLI says
one line on a damaged SQLite file; over stdio every line a client sends is answered, and
over HTTP the same lines keep their 400s; after the Chroma folder is deleted behind the
daemon, the advice the error gives (`imprint stop`, `imprint repair`) brings writes back."""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import anyio
import httpx
import pytest
from mcp.client import Client

from tests.integration.conftest import daemon_pid
from tests.integration.conftest import http_server as _http_server
from tests.integration.conftest import owner_env as _env
from tests.support.serve import MCP_HEADERS, _stdio, _text

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

REPLY_SEC = 60  # a reply that has not come by then never comes


def _cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "imprint.cli", *args],
        env=_env(data_dir),
        cwd=data_dir.parent,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _store_one(data_dir: Path, cwd: Path, content: str) -> str:
    async def go() -> str:
        async with Client(_stdio(data_dir, cwd)) as client:
            return _text(await client.call_tool("store", {"content": content})).split()[1]

    return anyio.run(go)


def _stop(data_dir: Path) -> None:
    stopped = _cli(data_dir, "stop")
    assert stopped.returncode == 0, stopped.stderr
    assert daemon_pid(data_dir) is None


@pytest.mark.parametrize("size", ["half", "100-bytes"])
def test_cli_on_a_truncated_sqlite_file_says_one_line(
    data_dir: Path, tmp_path: Path, size: str
) -> None:
    """`imprint status`, `status --check`, `repair` and `search` on a workspace whose
    imprint.sqlite3 was cut short: exit 2 and one `error:` line naming the file and what to
    do (before: a sqlite3.DatabaseError traceback); the file is left as it was."""
    _store_one(data_dir, tmp_path, "the guillemot lays one egg")
    _stop(data_dir)
    db = data_dir / "workspaces" / "default" / "imprint.sqlite3"
    whole = db.read_bytes()
    db.write_bytes(whole[: len(whole) // 2] if size == "half" else whole[:100])
    before = db.read_bytes()
    for args in (["status"], ["status", "--check"], ["repair"], ["search", "guillemot"]):
        done = _cli(data_dir, *args)
        assert done.returncode == 2, (args, done.stderr)
        assert "Traceback" not in done.stderr, (args, done.stderr)
        last = done.stderr.strip().splitlines()[-1]
        assert last.startswith("error: workspace default: imprint.sqlite3 is not a database")
        assert "nothing was changed" in last and "backup" in last
        assert db.read_bytes() == before


def test_the_advice_after_the_chroma_folder_went_brings_writes_back(
    data_dir: Path, tmp_path: Path
) -> None:
    """The Chroma folder deleted behind a running daemon: a store answers one line naming
    `imprint stop` and `imprint repair` (before: `Error executing tool store`); following
    it, writes work again, the indexes agree and every acknowledged memory is found."""
    kept = _store_one(data_dir, tmp_path, "the puffin carries sand eels")
    shutil.rmtree(data_dir / "workspaces" / "default" / "chroma")

    async def refused() -> tuple[bool, str]:
        async with Client(_stdio(data_dir, tmp_path)) as client:
            result = await client.call_tool("store", {"content": "the razorbill"})
            return bool(result.is_error), str(result.content[0].text)  # type: ignore[union-attr]

    is_error, message = anyio.run(refused)
    assert is_error and "\n" not in message and "Error executing tool" not in message
    assert "`imprint stop`, then `imprint repair`" in message
    _stop(data_dir)
    repaired = _cli(data_dir, "repair")
    assert repaired.returncode == 0, repaired.stderr
    later = _store_one(data_dir, tmp_path, "the skua robs the tern")
    _stop(data_dir)
    check = _cli(data_dir, "status", "--check")
    assert check.returncode == 0, check.stdout
    found = _cli(data_dir, "search", "puffin skua", "--mode", "lexical")
    assert kept in found.stdout and later in found.stdout


# -- stdio: every line is answered ------------------------------------------------------------

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": "init",
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bad-lines", "version": "1"},
    },
}
DEEP = 100_000
BAD_LINES: list[tuple[str, bytes, int | None]] = [
    # (what, the line, the error code it must get; None: accepted, answered by the tool)
    ("not JSON", b"hello there", -32700),
    ("100,000-deep nesting", b"[" * DEEP + b"]" * DEEP, -32700),
    (
        "deep nesting naming tools/list",
        b'{"jsonrpc":"2.0","id":"deep","method":"tools/list","params":' + b"[" * DEEP + b"}",
        -32700,
    ),
    ("a batch", b'[{"jsonrpc":"2.0","id":"b1","method":"ping"}]', -32600),
    ("bytes that are not UTF-8", b'\xff\xfe{"jsonrpc":', -32700),
    ("method not a string", b'{"jsonrpc":"2.0","id":"m42","method":42}', -32600),
    ("id neither string nor integer", b'{"jsonrpc":"2.0","id":true,"method":"ping"}', -32600),
    (
        "a lone surrogate",
        b'{"jsonrpc":"2.0","id":"sur","method":"tools/call","params":{"name":"store",'
        b'"arguments":{"content":"cut inside an emoji: \\ud83d"}}}',
        None,
    ),
]


class Lines:
    """A raw `imprint serve` subprocess, read line by line with a deadline per reply."""

    def __init__(self, data_dir: Path, cwd: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "imprint.cli", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=_env(data_dir),
            cwd=cwd,
        )
        self.replies: queue.Queue[dict[str, Any]] = queue.Queue()
        self.seen: dict[object, dict[str, Any]] = {}  # every reply with an id, by id
        self._reader = threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True)
        self._reader.start()

    def _read(self, out: IO[bytes]) -> None:
        for line in out:
            self.replies.put(json.loads(line))

    def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def until(self, request_id: object) -> list[dict[str, Any]]:
        """Every reply up to and including the one to `request_id`."""
        if request_id in self.seen:  # came while waiting for another
            return [self.seen[request_id]]
        got: list[dict[str, Any]] = []
        deadline = time.monotonic() + REPLY_SEC
        while not got or got[-1].get("id") != request_id:
            left = deadline - time.monotonic()
            try:
                reply = self.replies.get(timeout=max(left, 0.01))
            except queue.Empty:
                pytest.fail(f"no reply to {request_id!r} in {REPLY_SEC} s; got {got}")
            if reply.get("id") is not None:
                self.seen[reply["id"]] = reply
            got.append(reply)
        return got

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(timeout=30)  # its stdout ends with the process
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@pytest.fixture
def lines(data_dir: Path, tmp_path: Path) -> Iterator[Lines]:
    session = Lines(data_dir, tmp_path)
    try:
        yield session
    finally:
        session.close()


def test_every_line_sent_over_stdio_is_answered(lines: Lines) -> None:
    """Each bad line a client sends over stdio (not JSON, 100,000-deep nesting, a batch,
    bytes that are not UTF-8, an object that is no JSON-RPC message) gets a JSON-RPC error
    (before: no reply; the client waited forever, and deep nesting naming tools/list ended
    the session); a lone surrogate is read as U+FFFD; after each, the session still
    answers a ping (the SDK session) and a tools/list."""
    lines.send(json.dumps(INITIALIZE).encode())
    assert "result" in lines.until("init")[-1]
    lines.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    for n, (what, line, code) in enumerate(BAD_LINES):
        lines.send(line)
        lines.send(json.dumps({"jsonrpc": "2.0", "id": n, "method": "ping"}).encode())
        got = lines.until(n)
        errors = [r for r in got if "error" in r and r.get("id") != "sur"]
        if code is None:
            assert errors == [], (what, got)
        else:
            assert [r["error"]["code"] for r in errors] == [code], (what, got)
            error = errors[0]
            assert error["jsonrpc"] == "2.0" and "\n" not in error["error"]["message"]
            expected_id = "m42" if what == "method not a string" else None
            assert error["id"] == expected_id, (what, error)
        assert got[-1] == {"jsonrpc": "2.0", "id": n, "result": {}}, (what, got)
        lines.send(
            json.dumps({"jsonrpc": "2.0", "id": f"list{n}", "method": "tools/list"}).encode()
        )
        assert len(lines.until(f"list{n}")[-1]["result"]["tools"]) == 17, what
    stored = lines.until("sur")[-1]
    assert stored["result"]["isError"] is False, stored
    rid = stored["result"]["content"][0]["text"].split()[1]
    lines.send(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": "get",
                "method": "tools/call",
                "params": {"name": "get_memory", "arguments": {"id": rid}},
            }
        ).encode()
    )
    memory = lines.until("get")[-1]["result"]["content"][0]["text"]
    assert "cut inside an emoji: \ufffd" in memory


def test_the_same_bad_bodies_over_http_get_400(data_dir: Path, tmp_path: Path) -> None:
    """Over streamable HTTP each of those bodies gets 400 with a JSON-RPC error (the SDK's
    own answer, kept), and the server still answers an initialize after them."""
    with _http_server(data_dir, tmp_path) as (_proc, port):
        url = f"http://127.0.0.1:{port}/mcp"
        token = (data_dir / "http_token").read_text().strip()
        headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
        for what, line, _code in BAD_LINES:
            if what == "id neither string nor integer":
                continue  # the SDK reads it as a notification: 202, nothing to answer
            answer = httpx.post(url, content=line, headers=headers, timeout=30)
            assert answer.status_code == 400, (what, answer.text)
            assert answer.json()["error"]["code"] in (-32700, -32600, -32602), what
        init = httpx.post(url, json=INITIALIZE, headers=headers, timeout=30)
        assert init.status_code == 200, init.text
