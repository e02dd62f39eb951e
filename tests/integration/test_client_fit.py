"""Issue 45 end to end: clients that hang up mid-answer leave no traceback in any log."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import anyio
import pytest
from mcp.client import Client

from tests.integration.conftest import daemon_pid
from tests.integration.test_serve import _stdio, _text
from tests.wire import initialize_request

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

HANGUPS = 5
PENDING = 300  # tools/list answers (about 20 kB each) queued: far past any socket buffer


def _log(data_dir: Path) -> str:
    path = data_dir / "logs" / "imprint.jsonl"
    return path.read_text("utf-8", "replace") if path.exists() else ""


def _until_logged(data_dir: Path, event: str, count: int) -> None:
    """Until the daemon's log holds `event` `count` times."""
    deadline = time.monotonic() + 120
    while _log(data_dir).count(f'"{event}"') < count:
        assert time.monotonic() < deadline, f"{event} not logged {count} times"
        time.sleep(0.05)  # polling another process's log file


def _hang_up_mid_answer(path: Path) -> None:
    """A session that asks for far more than a socket holds, reads the first answer (the
    daemon is writing the rest) and hangs up: the daemon's next write meets EPIPE."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(60)  # a bound for a failing test, never reached by a passing one
        sock.connect(str(path))
        reader = sock.makefile("rb")
        hello = {"cwd": "/", "pid": 0, "roots": []}
        sock.sendall((json.dumps(hello) + "\n" + json.dumps(initialize_request()) + "\n").encode())
        assert json.loads(reader.readline()) == {"ok": True}
        assert json.loads(reader.readline())["id"] == 1
        # A progress token the front does not answer from its snapshot: the SDK answers.
        lines = [json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})]
        lines += [
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 10 + n,
                    "method": "tools/list",
                    "params": {"_meta": {"progressToken": 0.5}},
                }
            )
            for n in range(PENDING)
        ]
        sock.sendall(("\n".join(lines) + "\n").encode())
        assert json.loads(reader.readline())["id"] == 10
        reader.close()


def test_five_clients_hanging_up_mid_answer_leave_no_traceback(
    data_dir: Path, tmp_path: Path
) -> None:
    """Five sessions each hang up while the daemon writes their answers (EPIPE, as when
    Claude Code ends a session): each is one debug line `daemon.session.disconnected`; no
    `daemon.session.failed` and no traceback in the JSON log or the daemon's stderr log
    (before: an ~80-line ExceptionGroup ending in BrokenPipeError in front.py, in 26 of 37
    real sessions), and the same daemon answers the next client."""
    params = _stdio(data_dir, tmp_path)
    params.env = {**(params.env or {}), "IMPRINT_LOG_LEVEL": "debug"}

    async def one_call(content: str) -> str:
        async with Client(params) as client:
            return _text(await client.call_tool("store", {"content": content}))

    assert anyio.run(one_call, "the heron waits").startswith("stored ")  # at debug level
    pid = daemon_pid(data_dir)
    socket_file = Path(json.loads((data_dir / "run" / "daemon.json").read_text())["socket"])
    for _ in range(HANGUPS):
        ends = _log(data_dir).count('"daemon.session.end"')
        _hang_up_mid_answer(socket_file)
        _until_logged(data_dir, "daemon.session.end", ends + 1)
    assert anyio.run(one_call, "then the skua").startswith("stored ")
    assert daemon_pid(data_dir) == pid
    log = _log(data_dir)
    stderr_log = (data_dir / "run" / "daemon.stderr.log").read_text("utf-8", "replace")
    for text in (log, stderr_log):
        assert "Traceback" not in text, text[-3000:]
        assert "daemon.session.failed" not in text, text[-3000:]
    # At debug level its stderr log (the JSON file keeps info and up) has the one line each.
    lines = [line for line in stderr_log.splitlines() if "daemon.session.disconnected" in line]
    assert len(lines) == HANGUPS, stderr_log[-3000:]
    assert all("[debug" in line and "error=BrokenPipeError" in line for line in lines), lines
    assert "daemon.session.disconnected" not in log
