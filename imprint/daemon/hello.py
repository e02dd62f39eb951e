"""The hello: the one JSON line each connection opens with, and who is admitted to send it.

Wire format on the socket: one JSON line `{"cwd": ..., "pid": ..., "roots": [...]}` from the
client (tools such as ingest_path resolve paths against the client's working directory), one
JSON line back (`{"ok": true}` or `{"error": "..."}`), then MCP's newline-delimited JSON-RPC,
byte for byte as on stdio. `{"dashboard": {"port": ...}}` instead asks the owner to serve
the dashboard while the connection stays open.

Every hello of Imprint's clients also says which data dir it means (`"serves"`: resolved
path and instance id, `imprint.daemon.runfile.identity`). A daemon serving another one (the
original of a copied data dir, found through the copied run file) refuses it with its own
`"serves"` and runs nothing; one serving it answers with its `"serves"`, which the client
checks (`OtherDataDir` otherwise): the client then starts the copy's own daemon.

Before its hello a connection is bounded: one line of at most HELLO_MAX_BYTES within
hello_timeout_sec, at most max_connections open, and it does not keep the daemon alive.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from imprint.daemon._log import log
from imprint.errors import DaemonError

__all__ = [
    "CONNECT_WAIT_SEC",
    "HELLO_MAX_BYTES",
    "HELLO_TIMEOUT_SEC",
    "MAX_CONNECTIONS",
    "Deadlines",
    "OtherDataDir",
    "check_served",
    "close_listener",
    "hang_up",
    "other_data_dir",
    "peer_allowed",
    "read_hello",
    "refuse",
    "send_hello",
    "shut",
]

CONNECT_WAIT_SEC = 90.0
HELLO_TIMEOUT_SEC = 10.0
HELLO_MAX_BYTES = 64 * 1024
MAX_CONNECTIONS = 64


class OtherDataDir(DaemonError):
    """The daemon that answered serves another data dir than the client's."""


def other_data_dir(hello: dict[str, Any], serves: dict[str, str]) -> str | None:
    """The daemon's refusal when `hello` names another data dir than the one it serves;
    None when it names this one (or none: a hello of an older client)."""
    asked = hello.get("serves")
    if asked is None or asked == serves:
        return None
    log.warning("daemon.hello.other_data_dir")  # never the path asked: whatever was sent
    return (
        f"daemon: this daemon serves {serves['data_dir']} (instance {serves['instance']}), "
        "not the data dir the hello names (a copied run file?); start that one's own daemon"
    )


def check_served(answer: dict[str, Any], expected: dict[str, str] | None) -> None:
    """OtherDataDir when the daemon's answer says it serves another data dir than
    `expected` (an answer without "serves" is an older daemon's: it proves nothing)."""
    if expected is None or "serves" not in answer or answer["serves"] == expected:
        return
    theirs = answer["serves"] if isinstance(answer["serves"], dict) else {}
    raise OtherDataDir(
        f"daemon: the daemon that answered serves {theirs.get('data_dir')!s}, not "
        f"{expected['data_dir']}"
    )


def shut(conn: socket.socket) -> None:
    with contextlib.suppress(OSError):
        conn.shutdown(socket.SHUT_RDWR)


def hang_up(exc: BaseException) -> str | None:
    """The name of the error when `exc` says only that the peer went away (a broken pipe,
    a reset), alone or as every leaf of the exception group a task group raises; else
    None."""
    if isinstance(exc, BaseExceptionGroup):
        names = {hang_up(inner) for inner in exc.exceptions}
        return None if None in names else ", ".join(sorted(str(n) for n in names))
    return type(exc).__name__ if isinstance(exc, ConnectionError) else None


def close_listener(listener: socket.socket) -> None:
    """Shut first: an accept() waiting on it returns at once."""
    with contextlib.suppress(OSError):
        listener.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        listener.close()


class Deadlines:
    """One thread that shuts each connection still waiting for its hello at its deadline
    (one thread for all of them, not a timer thread per connection)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._due: dict[socket.socket, tuple[float, threading.Event]] = {}
        self._thread: threading.Thread | None = None
        self._closed = False

    def add(self, conn: socket.socket, seconds: float) -> threading.Event:
        """The returned event is set if the deadline shut the connection."""
        expired = threading.Event()
        with self._cond:
            self._due[conn] = (time.monotonic() + seconds, expired)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="imprint-hello-watch", daemon=True
                )
                self._thread.start()
            self._cond.notify()
        return expired

    def remove(self, conn: socket.socket) -> None:
        with self._cond:
            self._due.pop(conn, None)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _run(self) -> None:
        with self._cond:
            while not self._closed:
                now = time.monotonic()
                for conn, (due, expired) in list(self._due.items()):
                    if due <= now:
                        del self._due[conn]
                        expired.set()
                        shut(conn)
                soonest = min((due for due, _ in self._due.values()), default=None)
                self._cond.wait(None if soonest is None else max(0.0, soonest - now))


def peer_allowed(conn: socket.socket, peer_uid: Callable[[socket.socket], int | None]) -> bool:
    """Only this user's processes (or any, where the platform cannot tell)."""
    try:
        uid = peer_uid(conn)
    except OSError:
        log.warning("daemon.peer.unknown")
        return False
    if uid is not None and uid != os.getuid():
        log.warning("daemon.peer.refused", peer_uid=uid, own_uid=os.getuid())
        return False
    return True


def refuse(conn: socket.socket, message: str) -> None:
    """The refusal as the hello's answer, written without reading the hello."""
    with contextlib.suppress(OSError):
        conn.settimeout(1.0)
        conn.sendall((json.dumps({"error": message}) + "\n").encode())


def read_hello(
    conn: socket.socket, watch: Deadlines, timeout_sec: float
) -> tuple[io.BufferedReader, dict[str, Any]] | None:
    """One line of at most HELLO_MAX_BYTES within `timeout_sec`; None otherwise.

    The watch shuts the socket at the deadline, so a peer trickling bytes cannot stretch
    the wait the way a per-read timeout would let it.
    """
    raw = conn.makefile("rb")
    timed_out = watch.add(conn, timeout_sec)
    try:
        line = raw.readline(HELLO_MAX_BYTES + 1)
    except OSError:
        line = b""
    finally:
        watch.remove(conn)
    if not line and not timed_out.is_set():
        return None  # a probe (daemon_alive): connected and closed, nothing to report
    if not line.endswith(b"\n"):
        if len(line) > HELLO_MAX_BYTES:
            reason = "too long"
        elif timed_out.is_set():
            reason = "no hello in time"
        else:
            reason = "closed before the end of the hello"
        log.warning("daemon.hello.refused", reason=reason, received_bytes=len(line))
        return None
    try:
        hello = json.loads(line)
    except ValueError:
        hello = None
    if not isinstance(hello, dict):
        # Never the bytes themselves: they are whatever the peer sent.
        log.warning("daemon.hello.refused", reason="not a JSON object")
        return None
    return raw, hello


def send_hello(sock: socket.socket, hello: bytes, expected: dict[str, str] | None = None) -> bool:
    """Send the hello and read the daemon's answer: True when it serves this session, False
    when it closed first (it was stopping), an error when it refused (OtherDataDir when it
    serves another data dir than `expected`)."""
    sock.settimeout(CONNECT_WAIT_SEC)
    try:
        # A daemon at its connection cap writes its refusal and closes without reading the
        # hello: sending may then fail, and the refusal is still there to read.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(hello)
        line = b""
        while not line.endswith(b"\n") and len(line) < 4096:
            # What follows the line is MCP, left unread: the line is peeked at, then taken
            # up to its end (two reads, not one a byte: ~200 for a hello's answer).
            peeked = sock.recv(4096 - len(line), socket.MSG_PEEK)
            if not peeked:
                return False
            end = peeked.find(b"\n")
            line += sock.recv(len(peeked) if end < 0 else end + 1)
    except OSError:
        return False
    finally:
        with contextlib.suppress(OSError):
            sock.settimeout(None)
    try:
        answer = json.loads(line)
    except ValueError:
        answer = None
    if not isinstance(answer, dict) or not (answer.get("ok") or answer.get("error")):
        raise DaemonError("daemon: its answer to the hello is not one this version knows")
    check_served(answer, expected)
    if answer.get("error"):
        raise DaemonError(str(answer["error"]).splitlines()[0])
    return True
