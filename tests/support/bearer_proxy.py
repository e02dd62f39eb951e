"""A loopback HTTP proxy that adds `Authorization: Bearer <token>` to every request, for
clients that cannot send a header (the MCP conformance suite).

One request per connection: the proxy asks for `Connection: close`, then copies bytes both
ways until each side has closed, so a streamed (SSE) answer passes through as it comes.
A loopback Host or Origin naming the proxy's port is pointed at the server's, as a reverse
proxy would; any other (the conformance suite's DNS-rebinding probes) is left as sent."""

from __future__ import annotations

import contextlib
import re
import socket
import socketserver
import threading
from collections.abc import Iterator

__all__ = ["bearer_proxy"]

_HEAD_MAX = 64 * 1024
_LOOPBACK = rb"(localhost|127\.0\.0\.1|\[::1\])"


def _with_token(head: bytes, token: str, own_port: int, upstream_port: int) -> bytes:
    """The request head with the bearer header and `Connection: close` in place of any
    Authorization or Connection header the client sent, and Host/Origin re-pointed."""
    lines = head.split(b"\r\n")
    own = re.compile(_LOOPBACK + rb":" + str(own_port).encode() + rb"\b")
    kept = []
    for line in lines[1:]:
        name = line.split(b":", 1)[0].strip().lower()
        if not line or name in (b"authorization", b"connection"):
            continue
        if name in (b"host", b"origin"):
            line = own.sub(rb"\1:" + str(upstream_port).encode(), line)
        kept.append(line)
    extra = [f"Authorization: Bearer {token}".encode(), b"Connection: close"]
    return b"\r\n".join([lines[0], *kept, *extra]) + b"\r\n\r\n"


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while chunk := src.recv(65536):
            dst.sendall(chunk)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)


class _Handler(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        client: socket.socket = self.request
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = client.recv(65536)
            if not chunk or len(data) > _HEAD_MAX:
                return
            data += chunk
        head, rest = data.split(b"\r\n\r\n", 1)
        with socket.create_connection(("127.0.0.1", self.server.upstream_port)) as upstream:
            server = self.server
            own_port = int(server.server_address[1])
            fixed = _with_token(head, server.token, own_port, server.upstream_port)
            upstream.sendall(fixed + rest)
            back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
            back.start()
            _pump(client, upstream)
            back.join()


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, upstream_port: int, token: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.upstream_port = upstream_port
        self.token = token


@contextlib.contextmanager
def bearer_proxy(upstream_port: int, token: str) -> Iterator[int]:
    """A proxy on a free loopback port (yielded) in front of 127.0.0.1:`upstream_port`."""
    server = _Server(upstream_port, token)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
