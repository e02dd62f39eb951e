"""The daemon's answers to a hello that names an operation: one handler per operation, in
one table (`HANDLERS`). A hello that names none opens an MCP session instead
(`imprint.daemon.owner.Daemon`). Each handler answers on the connection itself: most with
one JSON line (`imprint.daemon.hosting`), a dashboard and an import with more."""

from __future__ import annotations

import io
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from imprint.daemon.hosting import (
    DashboardHost,
    answer_backup,
    answer_hook,
    answer_import,
    answer_status,
    answer_sync,
    answer_watch,
)

if TYPE_CHECKING:
    from imprint.actors.lifecycle import Runtime
    from imprint.capture.worker import CaptureWorker
    from imprint.watch import WatchHost

__all__ = ["HANDLERS", "Handler", "Owner"]


class Owner(Protocol):
    """What the handlers use of the daemon."""

    capture: CaptureWorker | None
    watches: WatchHost | None

    @property
    def dashboard(self) -> DashboardHost: ...

    def wait_runtime(self, timeout: float | None = None) -> Runtime: ...

    def watches_started(self, timeout: float) -> None: ...


Body = dict[str, Any]  # what the hello holds under the operation's name
Handler = Callable[[Owner, Body, socket.socket, io.BufferedReader], None]


def _dashboard(owner: Owner, body: Body, conn: socket.socket, raw: io.BufferedReader) -> None:
    owner.dashboard.serve(
        body,
        io.TextIOWrapper(raw, encoding="utf-8", newline="\n"),
        conn.makefile("w", encoding="utf-8", newline="\n"),
    )


def _capture(owner: Owner, body: Body, conn: socket.socket, raw: io.BufferedReader) -> None:
    if owner.capture is not None:
        owner.capture.poke()  # a hook queued a capture; it reads no answer


def _answering(answer: Callable[[Body, Callable[[float], Runtime]], str]) -> Handler:
    """A handler that sends `answer`'s one JSON line (it waits for the runtime itself)."""

    def handle(owner: Owner, body: Body, conn: socket.socket, raw: io.BufferedReader) -> None:
        conn.sendall(answer(body, owner.wait_runtime).encode())

    return handle


def _watch(owner: Owner, body: Body, conn: socket.socket, raw: io.BufferedReader) -> None:
    owner.watches_started(120)  # the watches start once the runtime has
    conn.sendall(answer_watch(body, owner.watches).encode())


def _status(owner: Owner, body: Body, conn: socket.socket, raw: io.BufferedReader) -> None:
    def watches() -> WatchHost | None:  # only for a status asked with its text
        owner.watches_started(120)  # the watches start once the runtime has
        return owner.watches

    conn.sendall(answer_status(body, owner.wait_runtime, watches).encode())


def _import(owner: Owner, body: Body, conn: socket.socket, raw: io.BufferedReader) -> None:
    answer_import(body, owner.wait_runtime, lambda t: conn.sendall(t.encode()))


# In the order the daemon looks for them: a hello that names two is answered by the first.
HANDLERS: dict[str, Handler] = {
    "dashboard": _dashboard,
    "capture": _capture,
    "status": _status,
    "hook": _answering(answer_hook),
    "watch": _watch,
    "backup": _answering(answer_backup),
    "sync": _answering(answer_sync),
    "import": _import,
}
