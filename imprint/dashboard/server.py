"""Serve the dashboard from the process that owns the data dir, on 127.0.0.1 only.

uvicorn runs in a thread of the owner (the daemon, `serve --http`, or the process that
`imprint dashboard` runs in when asked to), over the owner's one runtime, with
`imprint._loopback`'s protocol: only this user's connections are read, each request must
arrive within `server.http_read_timeout_sec`, at most `server.http_max_connections` open.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from pathlib import Path

import uvicorn

from imprint._loopback import LoopbackConfig
from imprint.actors.lifecycle import Runtime
from imprint.dashboard._security import LOOPBACK, Guard
from imprint.dashboard.app import Owner, build_app
from imprint.errors import ImprintError
from imprint.logs import get_logger

__all__ = ["DashboardServer", "check_host"]

log = get_logger("imprint.dashboard")
START_TIMEOUT_SEC = 30.0


def check_host(host: str) -> str:
    """Only loopback: every local user can reach it, but no other computer can."""
    if host != LOOPBACK:
        raise ImprintError(f"host: {host!r} is not allowed; the dashboard binds {LOOPBACK} only")
    return host


class DashboardServer:
    def __init__(
        self, runtime: Runtime, owner: Owner, *, port: int = 8766, cwd: Path | None = None
    ) -> None:
        self.runtime = runtime
        self.guard = Guard()
        self.owner = owner
        self._requested = port
        self._cwd = cwd
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None

    @property
    def port(self) -> int:
        return self.guard.port

    def start(self) -> DashboardServer:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((LOOPBACK, self._requested))
        except OSError as exc:
            sock.close()
            raise ImprintError(
                f"port: {self._requested} on {LOOPBACK} is not free ({exc.strerror}); "
                "pick another with --port"
            ) from exc
        sock.listen(64)
        self._sock = sock
        self.guard.port = sock.getsockname()[1]
        app = build_app(self.runtime, self.guard, self.owner, self._cwd)
        settings = self.runtime.config.server
        config = LoopbackConfig(
            app,
            name="dashboard",
            read_timeout_sec=settings.http_read_timeout_sec,
            max_connections=settings.http_max_connections,
            log_config=None,  # the owner's logging; never stdout
            access_log=False,  # a first request's URL carries the one-time token
            lifespan="off",
            timeout_graceful_shutdown=5,
        )
        self._server = uvicorn.Server(config)
        started = threading.Event()
        server = self._server

        def run() -> None:
            try:
                server.run(sockets=[sock])
            finally:
                started.set()

        self._thread = threading.Thread(target=run, name="imprint-dashboard", daemon=True)
        self._thread.start()
        # uvicorn has no start event to wait on; its `started` flag flips once it serves.
        while not server.started and not started.wait(0.02):
            pass
        if not server.started:
            self.stop()
            raise ImprintError("dashboard: the web server did not start; see the owner's log")
        log.info("dashboard.started", port=self.port)
        return self

    def url(self) -> str:
        """A URL with a fresh one-time token, for the owner only."""
        return self.guard.url("/")

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=15)
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
        log.info("dashboard.stopped", port=self.port)
