"""The loopback HTTP layer both servers use: who may connect, and how long a request may take.

In-process uvicorn over `imprint._loopback.LoopbackConfig`; the peer's uid comes from the
kernel's TCP table (a real second user is in tests/integration/test_loopback_users.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from imprint import _loopback
from imprint._loopback import LoopbackConfig, tcp_peer_uid
from tests.support.wire import read_until_closed

pytestmark = pytest.mark.timeout(60)

REQUEST = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
HALF_SENT = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "


class App:
    """Answers 200; `/slow` first waits for `release` (set from the test's thread)."""

    def __init__(self) -> None:
        self.calls = 0
        self.release = threading.Event()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        self.calls += 1
        if scope["path"] == "/slow":
            await asyncio.to_thread(self.release.wait, 30)
        headers = [(b"content-length", b"2")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"ok"})


class Server(uvicorn.Server):
    """uvicorn's server with an event set once it listens."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        self.ready.set()


@contextlib.contextmanager
def serving(app: App, **settings: Any) -> Iterator[int]:
    """A LoopbackConfig server on a free 127.0.0.1 port, in a thread; stopped on exit."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = Server(LoopbackConfig(app, name="test", lifespan="off", **settings))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        assert server.ready.wait(20), "the server did not start"
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(timeout=20)
        sock.close()


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=20)


def answer(sock: socket.socket) -> bytes:
    """One whole response: its head and its two-byte body."""
    data = b""
    while not (b"\r\n\r\n" in data and len(data.split(b"\r\n\r\n", 1)[1]) >= 2):
        chunk = sock.recv(65536)
        assert chunk, data
        data += chunk
    return data


def test_the_kernel_table_names_this_user_at_the_other_end() -> None:
    """A real loopback connection's peer is found in /proc/net/tcp with this process's uid;
    a connection that does not exist is not found."""
    if not _loopback.peer_check_available():
        pytest.skip("no /proc/net/tcp here")
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        with socket.create_connection(listener.getsockname()) as client:
            server_side, _ = listener.accept()
            with server_side:
                local, remote = server_side.getsockname(), server_side.getpeername()
                assert tcp_peer_uid(local, remote) == os.getuid()
                assert tcp_peer_uid(remote, local) == os.getuid()  # and the other way
                assert client.getsockname() == remote
    assert tcp_peer_uid(("127.0.0.1", 1), ("127.0.0.1", 2)) is None


def test_table_rows_are_read_in_host_order_and_time_wait_rows_are_skipped(
    tmp_path: Path,
) -> None:
    """Addresses in the table are 32-bit words in host byte order; a row without an inode
    (time-wait, orphaned) names no process and is passed over for a live one."""

    def word(ip: bytes) -> str:
        words = (ip[i : i + 4] for i in range(0, len(ip), 4))
        return "".join(f"{int.from_bytes(w, sys.byteorder):08X}" for w in words)

    def row(local: str, remote: str, state: str, uid: int, inode: int) -> str:
        return f"   0: {local} {remote} {state} 00000000:00000000 00:00000000 0 {uid} 0 {inode} 1\n"

    lo, lo6 = word(bytes([127, 0, 0, 1])), word(bytes(15) + b"\x01")
    header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid\n"
    tcp = tmp_path / "tcp"
    time_wait = row(f"{lo}:9C40", f"{lo}:1F90", "06", 0, 0)
    tcp.write_text(header + time_wait + row(f"{lo}:9C40", f"{lo}:1F90", "01", 1234, 555))
    tcp6 = tmp_path / "tcp6"
    tcp6.write_text(header + row(f"{lo6}:9C41", f"{lo6}:1F90", "01", 4321, 556))
    tables = (tcp, tcp6)
    assert tcp_peer_uid(("127.0.0.1", 8080), ("127.0.0.1", 40000), tables) == 1234
    assert tcp_peer_uid(("::1", 8080, 0, 0), ("::1", 40001, 0, 0), tables) == 4321
    assert tcp_peer_uid(("127.0.0.1", 8080), ("127.0.0.1", 40002), tables) is None
    tcp.write_text(header + time_wait)
    assert tcp_peer_uid(("127.0.0.1", 8080), ("127.0.0.1", 40000), tables) is None


@pytest.mark.parametrize("seen_uid", ["other", "unknown"])
def test_a_peer_of_another_uid_is_cut_before_its_request_is_read(
    seen_uid: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A connection whose peer the table shows as another uid (or does not show at all) is
    closed with no answer and never reaches the app; the refusals are counted."""
    if not _loopback.peer_check_available():
        pytest.skip("no /proc/net/tcp here")
    uid = os.getuid() + 1 if seen_uid == "other" else None
    monkeypatch.setattr(_loopback, "tcp_peer_uid", lambda *_a, **_k: uid)
    app = App()
    before = _loopback.refused_count()
    with serving(app) as port, connect(port) as sock:
        with contextlib.suppress(OSError):  # it may be cut while we send
            sock.sendall(REQUEST)
        assert read_until_closed(sock) == b""
    assert app.calls == 0
    assert _loopback.refused_count() == before + 1


def test_this_users_request_is_answered() -> None:
    """The owner's own connection passes the uid check and gets its answer."""
    app = App()
    with serving(app) as port, connect(port) as sock:
        sock.sendall(REQUEST)
        assert answer(sock).startswith(b"HTTP/1.1 200")
    assert app.calls == 1


def test_a_half_sent_or_silent_request_is_closed_at_the_read_timeout() -> None:
    """Headers that never end, or a connection that sends nothing, are closed by the server
    at `read_timeout_sec` (uvicorn alone keeps both open for good)."""
    app = App()
    with serving(app, read_timeout_sec=0.3) as port, connect(port) as half, connect(port) as silent:
        half.sendall(HALF_SENT)
        assert read_until_closed(half) == b""
        assert read_until_closed(silent) == b""
    assert app.calls == 0


def test_a_half_sent_second_request_on_a_kept_alive_connection_is_closed() -> None:
    """After one answer, the next request on the same connection gets its own deadline
    (uvicorn drops its keep-alive timer at the first byte of it)."""
    app = App()
    with serving(app, read_timeout_sec=0.3) as port, connect(port) as sock:
        sock.sendall(REQUEST)
        assert answer(sock).startswith(b"HTTP/1.1 200")
        sock.sendall(HALF_SENT)
        assert read_until_closed(sock) == b""
    assert app.calls == 1


def test_a_half_sent_body_is_closed_at_the_read_timeout() -> None:
    """A body shorter than its Content-Length: the request is not whole, the server closes."""
    app = App()
    head = b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n"
    with serving(app, read_timeout_sec=0.3) as port, connect(port) as sock:
        sock.sendall(head + b"x" * 10)
        read_until_closed(sock)


def test_a_request_whose_answer_takes_longer_than_the_timeout_is_answered() -> None:
    """The read timeout covers reading the request only: a slow answer is not cut, and the
    next request on the same connection is served."""
    app = App()
    with serving(app, read_timeout_sec=0.3) as port, connect(port) as slow:
        slow.sendall(REQUEST.replace(b"GET / ", b"GET /slow "))
        # Another connection, opened later, cut at its timeout: this one's has passed too.
        with connect(port) as witness:
            witness.sendall(HALF_SENT)
            assert read_until_closed(witness) == b""
        app.release.set()
        assert answer(slow).startswith(b"HTTP/1.1 200")
        slow.sendall(REQUEST)
        assert answer(slow).startswith(b"HTTP/1.1 200")


def test_connections_over_the_cap_get_503() -> None:
    """At `max_connections` open connections a further request is answered 503."""
    app = App()
    with serving(app, max_connections=4, read_timeout_sec=30) as port:
        idle = [connect(port) for _ in range(4)]
        try:
            with connect(port) as extra:
                extra.sendall(REQUEST)
                assert extra.recv(65536).startswith(b"HTTP/1.1 503")
        finally:
            for sock in idle:
                sock.close()
    assert app.calls == 0
