"""Another local user against the loopback ports: the dashboard's and `serve --http`'s.

The attacks of issue 26 (findings 1 and 4), replayed by a real second Unix user (created and
removed by the test; skipped where the tests do not run as root): with the owner's own
dashboard cookie or bearer token in hand, that user gets no HTTP answer at all, since the
connection is cut before it is read; hundreds of half-sent requests neither stop the daemon
nor keep the owner out; and the owner's own half-sent request is closed at the read timeout.
"""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.integration.conftest import daemon_pid
from tests.support.second_user import OtherUser
from tests.support.wire import initialize_request, read_until_closed

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

READ_TIMEOUT_SEC = 1.0

# The attacker: open COUNT connections to PORT, send PAYLOAD on each, say "ready", and once
# told (a line on stdin), report what each got: an answer, cut by the server, or still open.
ATTACKER = textwrap.dedent(
    """
    import json, select, socket, sys, time
    port, count, payload = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].encode()
    socks, cut = [], 0
    for _ in range(count):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        try:
            s.sendall(payload)
        except OSError:
            cut += 1
            continue
        s.setblocking(False)
        socks.append(s)
    print("ready", flush=True)
    sys.stdin.readline()
    answered, received = 0, b""
    deadline = time.monotonic() + 10
    while socks and time.monotonic() < deadline:
        ready, _, _ = select.select(socks, [], [], max(0.0, deadline - time.monotonic()))
        for s in ready:
            try:
                data = s.recv(65536)
            except OSError:
                data = b""
            if data:
                answered += 1
                received += data[:200]
            else:
                cut += 1
            socks.remove(s)
            s.close()
    print(json.dumps({"cut": cut, "answered": answered, "open": len(socks),
                      "received": received.decode("latin-1")}), flush=True)
    """
)


class Attack:
    def __init__(self, user: OtherUser, port: int, count: int, payload: str) -> None:
        self.proc = subprocess.Popen(
            user.command("-c", ATTACKER, str(port), str(count), payload),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if line != "ready":
            self.proc.kill()
            raise AssertionError(self.proc.communicate(timeout=30))

    def report(self) -> dict[str, object]:
        out, err = self.proc.communicate("go\n", timeout=60)
        assert self.proc.returncode == 0, err
        result: dict[str, object] = json.loads(out)
        return result


def _env(data_dir: Path) -> dict[str, str]:
    return {
        **os.environ,
        "IMPRINT_DATA_DIR": str(data_dir),
        "IMPRINT_SERVER_IDLE_EXIT_SEC": "60",
        "IMPRINT_SERVER_HTTP_READ_TIMEOUT_SEC": str(READ_TIMEOUT_SEC),
    }


def _limited(nofile: int | None) -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C stops `imprint dashboard`
    if nofile is not None:  # inherited by the daemon it starts
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, hard))


@contextmanager
def dashboard(data_dir: Path, cwd: Path, nofile: int | None = None) -> Iterator[str]:
    """`imprint dashboard --port 0` (starting the daemon) while the block runs: its URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "imprint.cli", "dashboard", "--port", "0"],
        env=_env(data_dir),
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: _limited(nofile),
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()  # blocks until the owner answered
    try:
        if not url:
            raise AssertionError(proc.communicate(timeout=30)[1])
        yield url
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)


@contextmanager
def signed_in(url: str) -> Iterator[tuple[httpx.Client, str, int]]:
    """A client holding the owner's session cookie, the cookie's name and the port."""
    with httpx.Client(follow_redirects=True, timeout=30) as client:
        assert client.get(url).status_code == 200
        port = int(url.split(":")[2].split("/")[0])
        (name,) = list(client.cookies.keys())
        yield client, name, port


def test_another_user_with_the_owners_cookie_gets_nothing_from_the_dashboard(
    other_user: OtherUser, data_dir: Path, tmp_path: Path
) -> None:
    """Finding 1: a second user who got the owner's dashboard cookie (browsers send it to
    every 127.0.0.1 port, their page's too) reads no page and changes no setting: the
    connection is cut with no answer, while the owner's same request gets 200. The cookie
    is named after the port, so two dashboards in one browser keep one each."""
    with dashboard(data_dir, tmp_path) as url, signed_in(url) as (owner, name, port):
        cookie = f"{name}={owner.cookies[name]}"
        page = owner.get(f"http://127.0.0.1:{port}/settings")
        assert page.status_code == 200
        found = re.search(r'name="csrf-token" content="([^"]+)"', page.text)
        assert found, page.text[:500]
        body = f"csrf={found.group(1)}&key=ingest.allow_private_urls&value=true"
        steal = f"GET /sources HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: {cookie}\r\n\r\n"
        change = (
            f"POST /settings HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: {cookie}\r\n"
            f"Origin: http://127.0.0.1:{port}\r\n"
            "Content-Type: application/x-www-form-urlencoded\r\n"
            f"Content-Length: {len(body)}\r\n\r\n{body}"
        )
        for request in (steal, change):
            report = Attack(other_user, port, 1, request).report()
            assert report == {"cut": 1, "answered": 0, "open": 0, "received": ""}
        assert owner.get(f"http://127.0.0.1:{port}/sources").status_code == 200
        assert name == f"imprint_dashboard_{port}"
    config = data_dir / "config.toml"
    assert not config.exists() or "allow_private_urls" not in config.read_text()


@contextmanager
def http_server(data_dir: Path, cwd: Path) -> Iterator[int]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    proc = subprocess.Popen(
        [sys.executable, "-m", "imprint.cli", "serve", "--http", "--port", str(port)],
        env=_env(data_dir),
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/mcp", timeout=1)
                break
            except httpx.TransportError as exc:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(proc.communicate()[1]) from exc
                time.sleep(0.1)  # polling a starting server; nothing to wait on
        yield port
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)


INIT = json.dumps(initialize_request("t"))


def test_another_user_with_the_bearer_token_gets_nothing_from_serve_http(
    other_user: OtherUser, data_dir: Path, tmp_path: Path
) -> None:
    """Finding 1 over `serve --http`: the owner's valid bearer token, sent by a second
    user, gets no answer (cut before the request is read); the owner's gets 200; the
    owner's half-sent request is closed at the read timeout."""
    with http_server(data_dir, tmp_path) as port:
        token = (data_dir / "http_token").read_text().strip()
        request = (
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
            "Accept: application/json, text/event-stream\r\n"
            f"Content-Length: {len(INIT)}\r\n\r\n{INIT}"
        )
        report = Attack(other_user, port, 1, request).report()
        assert report == {"cut": 1, "answered": 0, "open": 0, "received": ""}
        with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
            sock.sendall(request.encode())
            assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        with socket.create_connection(("127.0.0.1", port), timeout=60) as half:
            half.sendall(request.encode()[:60])
            assert read_until_closed(half) == b""  # a socket timeout (60 s) fails here
    # At server.http_read_timeout_sec as configured (the environment's), not the default.
    log = (data_dir / "logs" / "imprint.jsonl").read_text(encoding="utf-8")
    events = [json.loads(line) for line in log.splitlines()]
    cut = [e for e in events if e["event"] == "loopback.request.timeout"]
    assert cut and all(e["timeout_sec"] == READ_TIMEOUT_SEC for e in cut)
    assert {e["server"] for e in cut} == {"serve --http"}


def test_half_sent_requests_of_another_user_neither_stop_the_daemon_nor_lock_out_the_owner(
    other_user: OtherUser, data_dir: Path, tmp_path: Path
) -> None:
    """Finding 4: a second user opens more half-sent requests to the dashboard than the
    daemon may hold descriptors; the daemon stays up, the owner still gets pages and a new
    `imprint dashboard` through the socket, and the attacker's connections were all cut.
    The owner's own half-sent request is closed by the server at the read timeout."""
    nofile = 256
    with dashboard(data_dir, tmp_path, nofile=nofile) as url:
        pid = daemon_pid(data_dir)
        with signed_in(url) as (owner, _, port):
            half = f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: "
            attack = Attack(other_user, port, nofile + 100, half)
            try:
                assert owner.get(f"http://127.0.0.1:{port}/").status_code == 200
                with dashboard(data_dir, tmp_path) as again:
                    assert again.split("?")[0] == url.split("?")[0]
                assert pid is not None and daemon_pid(data_dir) == pid
                os.kill(pid, 0)  # still running
            finally:
                report = attack.report()
            assert report["answered"] == 0 and report["open"] == 0, report
            with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
                sock.sendall(half.encode())
                assert read_until_closed(sock) == b""  # a socket timeout (60 s) fails here
            assert owner.get(f"http://127.0.0.1:{port}/").status_code == 200
