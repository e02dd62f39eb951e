"""Loopback HTTP that serves only this user: the dashboard's and `serve --http`'s uvicorn.

Any local user can connect to 127.0.0.1, and a browser sends a site's cookies to every port
of it, so a token or a cookie alone does not tell the owner from another user who got hold
of one. Each connection is checked before a byte of it is read: on Linux the kernel lists
every TCP socket of this network namespace with its owner's uid (`/proc/net/tcp`, `tcp6`);
the entry whose local end is this connection's remote end is the peer's socket. A peer of
another uid, or one the table does not show (closed already, orphaned), is cut at once.
Where there is no `/proc/net/tcp` (macOS, BSD) nothing tells the peer's uid, and the
token or cookie check behind this is the only guard.

Each request must also arrive whole (head and body) within `read_timeout_sec` of the
connection opening or of its first byte after a response: a half-sent request does not
hold a file descriptor for longer. uvicorn caps open connections (`limit_concurrency`,
503 above it) and idle keep-alive connections (`timeout_keep_alive`).
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import sys
import threading
from pathlib import Path
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from imprint.logs import get_logger

__all__ = [
    "PROC_TCP",
    "LoopbackConfig",
    "LoopbackProtocol",
    "peer_check_available",
    "refused_count",
    "tcp_peer_uid",
]

log = get_logger("imprint.loopback")

PROC_TCP = (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))
READ_TIMEOUT_SEC = 5.0
MAX_CONNECTIONS = 64
MAX_HEADER_BYTES = 16 * 1024
KEEP_ALIVE_SEC = 5  # an idle connection between requests is closed after this
_LOGGED_EACH = 10  # the first refusals each get a line; then one line per hundred

Address = tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]


def _address(host: str, port: int) -> Address:
    ip = ipaddress.ip_address(host.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip, port


def _proc_address(field: str) -> Address:
    """`0100007F:1F90` (IPv4) or 32 hex digits (IPv6): each 32-bit word in host order."""
    hexip, hexport = field.split(":")
    raw = b"".join(
        int(hexip[i : i + 8], 16).to_bytes(4, sys.byteorder) for i in range(0, len(hexip), 8)
    )
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(raw)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip, int(hexport, 16)


def peer_check_available(tables: tuple[Path, ...] = PROC_TCP) -> bool:
    return tables[0].exists()


def tcp_peer_uid(
    local: tuple[Any, ...], remote: tuple[Any, ...], tables: tuple[Path, ...] = PROC_TCP
) -> int | None:
    """The uid owning the other end of the TCP connection `local` <-> `remote` (this side's
    sockname and peername), from the kernel's socket tables; None when no live socket of a
    process holds it (gone, or left to the kernel: orphaned or in time-wait, inode 0)."""
    want_local = _address(str(remote[0]), int(remote[1]))  # the peer's own local end
    want_remote = _address(str(local[0]), int(local[1]))
    for table in tables:
        try:
            lines = table.read_text(encoding="ascii").splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10:
                continue
            try:
                if _proc_address(fields[1]) != want_local:
                    continue
                if _proc_address(fields[2]) != want_remote:
                    continue
                uid, inode = int(fields[7]), int(fields[9])
            except ValueError:
                continue
            if inode:  # else time-wait or orphaned: no process holds it; a live one may follow
                return uid
    return None


_refused = 0
_refused_lock = threading.Lock()


def refused_count() -> int:
    """Connections refused in this process for coming from another user (or none known)."""
    return _refused


def _admit(transport: asyncio.BaseTransport, server: str) -> bool:
    global _refused
    if not peer_check_available():
        return True
    sock = transport.get_extra_info("socket")
    try:
        uid = tcp_peer_uid(sock.getsockname(), sock.getpeername())
    except (OSError, ValueError, AttributeError):
        uid = None
    if uid == os.getuid():
        return True
    with _refused_lock:
        _refused += 1
        count = _refused
    if count <= _LOGGED_EACH or count % 100 == 0:
        log.warning(
            "loopback.peer.refused", server=server, peer_uid=uid, own_uid=os.getuid(), count=count
        )
    return False


class LoopbackConfig(uvicorn.Config):
    """uvicorn's settings for a loopback server of this user's: the peer-checking h11
    protocol, the asyncio loop (its accept pauses on EMFILE instead of failing), no access
    log, no server header, logs through the owner's handlers, never stdout."""

    def __init__(
        self,
        app: Any,
        *,
        name: str,
        read_timeout_sec: float = READ_TIMEOUT_SEC,
        max_connections: int = MAX_CONNECTIONS,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("log_config", None)
        kwargs.setdefault("access_log", False)  # request lines can carry one-time tokens
        kwargs.setdefault("server_header", False)
        kwargs.setdefault("proxy_headers", False)
        kwargs.setdefault("timeout_keep_alive", KEEP_ALIVE_SEC)
        super().__init__(
            app,
            http=LoopbackProtocol,
            ws="none",
            loop="asyncio",
            limit_concurrency=max_connections,
            h11_max_incomplete_event_size=MAX_HEADER_BYTES,
            **kwargs,
        )
        self.name = name
        self.read_timeout_sec = read_timeout_sec


class LoopbackProtocol(H11Protocol):
    """uvicorn's h11 protocol, refusing other users' connections before reading them and
    closing a request that does not arrive whole within the read timeout."""

    def __init__(self, config: uvicorn.Config, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        self._name: str = getattr(config, "name", "http")
        self._read_timeout: float = getattr(config, "read_timeout_sec", READ_TIMEOUT_SEC)
        self._refused = False
        self._deadline: asyncio.TimerHandle | None = None
        self._read_cycle: Any = None  # the last request whose head and body all arrived

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if not _admit(transport, self._name):
            self._refused = True
            transport.abort()  # nothing read, nothing answered
            return
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if not self._refused:
            super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        if self._deadline is None and self._between_requests():
            self._arm()
        super().data_received(data)

    def handle_events(self) -> None:
        super().handle_events()
        cycle = self.cycle
        if cycle is not None and cycle is not self._read_cycle and not cycle.more_body:
            self._read_cycle = cycle
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # A pipelined request left half-read in the buffer gets its own deadline.
        if self._deadline is None and self._between_requests() and self.conn.trailing_data[0]:
            self._arm()

    def _between_requests(self) -> bool:
        cycle = self.cycle
        return cycle is None or (cycle is self._read_cycle and cycle.response_complete)

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self._read_timeout, self._timed_out)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _timed_out(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        log.info("loopback.request.timeout", server=self._name, timeout_sec=self._read_timeout)
        self.transport.close()
