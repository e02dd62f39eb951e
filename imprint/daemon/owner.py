"""The owner: one process per data dir, shared by every `imprint serve`.

Every assistant session starts its own `imprint serve`, but Chroma's embedded store allows
one writing process. So the first `imprint serve` starts a daemon that owns the data dir (its
store, its actors, later its one model copy) and listens on a Unix socket; each `imprint
serve` then bridges its stdin and stdout to one socket connection. The daemon serves each
connection as its own MCP session over the shared runtime and exits after
`server.idle_exit_sec` without connections. It checks every SOCKET_CHECK_SEC that its socket
file is still its own and binds it again if it vanished (a tmp cleaner).
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

from imprint._fs import atomic_write_text
from imprint.daemon._log import log
from imprint.daemon.front import Front
from imprint.daemon.handlers import HANDLERS
from imprint.daemon.hello import (
    HELLO_TIMEOUT_SEC,
    MAX_CONNECTIONS,
    Deadlines,
    close_listener,
    hang_up,
    other_data_dir,
    peer_allowed,
    read_hello,
    refuse,
    shut,
)
from imprint.daemon.hosting import DashboardHost
from imprint.daemon.rolling import RollingBackups
from imprint.daemon.runfile import (
    STDERR_LOG_KEEP,
    STDERR_LOG_MAX_BYTES,
    STOP_GRACE_SEC,
    identity,
    proc_start,
    rotate_log,
    run_dir,
)
from imprint.daemon.security import check_private, peer_uid, socket_path
from imprint.daemon.warm import Warmup
from imprint.errors import StoreError
from imprint.server.handshake import load_handshake

if TYPE_CHECKING:
    from imprint.actors.lifecycle import Runtime
    from imprint.capture.worker import CaptureWorker
    from imprint.config import Config
    from imprint.watch import WatchHost

__all__ = ["Daemon", "run_daemon"]

SOCKET_CHECK_SEC = 2.0
# accept() failing with these is the process (or the system) short of something for now.
TRANSIENT_ACCEPT_ERRORS = frozenset(
    {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM, errno.ECONNABORTED, errno.EPROTO}
)
ACCEPT_BACKOFF_SEC = 0.05
ACCEPT_BACKOFF_MAX_SEC = 1.0


class Daemon:
    """Owns the runtime; serves MCP sessions on a Unix socket (and optionally HTTP)."""

    def __init__(
        self,
        data_dir: Path,
        config: Config,
        *,
        idle_exit_sec: float | None,
        hello_timeout_sec: float = HELLO_TIMEOUT_SEC,
        max_connections: int = MAX_CONNECTIONS,
        peer_uid: Callable[[socket.socket], int | None] = peer_uid,
        warm_embedder: bool = True,
        kind: str = "daemon",
    ) -> None:
        self.data_dir = data_dir
        self.config = config
        self.idle_exit_sec = idle_exit_sec
        self.hello_timeout_sec = hello_timeout_sec
        self.max_connections = max_connections
        self._peer_uid = peer_uid
        self.warm_embedder = warm_embedder
        # initialize and tools/list answered from this while MCP and the runtime load.
        self.handshake = load_handshake()
        self.path = socket_path(data_dir)
        self.serves = identity(data_dir)  # proven in every hello's answer (`hello.check_served`)
        from filelock import FileLock

        self._lock = FileLock(run_dir(data_dir) / "daemon.lock", thread_local=False, mode=0o600)
        self._active = 0  # sessions past their hello: only these keep the daemon alive
        self._open = 0  # every accepted connection, hello or not: the cap counts these
        self._last_change = time.monotonic()
        self._state = threading.Condition()
        self._stopping = threading.Event()
        self._hello_watch = Deadlines()
        self._warmup = Warmup(
            data_dir,
            config,
            embedder=warm_embedder,
            stopping=self._stopping,
            then=self._check_handshake,
        )
        self._listener: socket.socket | None = None
        self._bound: tuple[int, int] | None = None  # (st_dev, st_ino) of our socket file
        self._listen_lock = threading.Lock()
        self.kind = kind
        self.started_at = time.time()
        self.sessions = 0  # MCP sessions now connected
        self.accept_failures = 0  # transient accept() errors (EMFILE...), each logged
        self._dashboard = DashboardHost(
            self.wait_runtime, kind=kind, started_at=self.started_at, clients=lambda: self.sessions
        )
        self.capture: CaptureWorker | None = None  # drains the hooks' capture queue
        self.backups = RollingBackups(
            data_dir, config.backup, self.wait_runtime, started=self._warmup.wait_started
        )
        self.watches: WatchHost | None = None  # the watched folders (`imprint watch`)
        self._watch_lock = threading.Lock()  # the watches started, or none after shutdown
        self._watch_thread: threading.Thread | None = None

    @property
    def runtime(self) -> Runtime | None:
        """The started runtime; None while it starts (or when starting failed)."""
        return self._warmup.runtime

    def wait_runtime(self, timeout: float | None = None) -> Runtime:
        """The started runtime, once the background start is done; its error if it failed."""
        return self._warmup.wait_runtime(timeout)

    @property
    def dashboard(self) -> DashboardHost:
        """The dashboard server every `imprint dashboard` connected shares."""
        return self._dashboard

    def watches_started(self, timeout: float) -> None:
        """Wait, at most `timeout` seconds, for the watches to start (once the runtime has)."""
        if self._watch_thread is not None:
            self._watch_thread.join(timeout)

    def acquire(self) -> bool:
        """False when another daemon already owns this data dir."""
        from filelock import Timeout

        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            return False
        info = {
            "pid": os.getpid(),
            "socket": str(self.path),
            "started_at": self.started_at,
            "proc_start": proc_start(os.getpid()),
            "kind": self.kind,
            "serves": self.serves,
        }
        atomic_write_text(run_dir(self.data_dir) / "daemon.json", json.dumps(info))
        return True

    def start(self) -> None:
        """Listen at once; the runtime starts (and the embedder loads) in the background
        (`imprint.daemon.warm`)."""
        self._listen()
        threading.Thread(
            target=self._watch_socket, name="imprint-socket-watch", daemon=True
        ).start()
        self._warmup.start()
        from imprint.capture.worker import CaptureWorker

        # It waits for the runtime, then captures what hooks queued while none ran.
        self.capture = CaptureWorker(self.data_dir, self.wait_runtime).start()
        self.backups.start()  # backup.every_hours; nothing runs when it is 0
        self._watch_thread = threading.Thread(
            target=self._start_watches, name="imprint-watch-start", daemon=True
        )
        self._watch_thread.start()

    def _start_watches(self) -> None:
        """Each persisted folder watched again, from a rescan of what changed meanwhile; once
        the background start has imported the package tree: importing `imprint.watch` here
        while the warm-up imports the tools deadlocked the two on their module locks (CI:
        `KeyError: 'imprint.reads'`, the runtime failed to start)."""
        self._warmup.wait_started()
        if self._stopping.is_set():
            return
        from imprint.watch import WatchHost

        with self._watch_lock:
            if not self._stopping.is_set():
                self.watches = WatchHost(self.data_dir, self.wait_runtime).start()

    def _check_handshake(self) -> None:
        """A snapshot written for another MCP version may not say what this one would: later
        sessions get the SDK's own answers (the test suite keeps the two equal)."""
        if self.handshake is None:
            return
        from importlib.metadata import version

        installed = version("mcp")
        if self.handshake.get("mcp") != installed:
            log.warning(
                "daemon.handshake.stale", snapshot=self.handshake.get("mcp"), installed=installed
            )
            self.handshake = None

    def _listen(self) -> None:
        self.path.unlink(missing_ok=True)  # a stale socket of a daemon that was killed
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # Bound 0600 from the start: no moment at which another user may connect.
        old = os.umask(0o177)
        try:
            listener.bind(str(self.path))
        finally:
            os.umask(old)
        os.chmod(self.path, 0o600)
        listener.listen(64)
        info = os.lstat(self.path)
        self._bound = (info.st_dev, info.st_ino)
        self._listener = listener
        log.info("daemon.listening", socket=str(self.path), pid=os.getpid())

    def _socket_intact(self) -> bool:
        try:
            info = os.lstat(self.path)
        except OSError:
            return False
        return (info.st_dev, info.st_ino) == self._bound

    def _watch_socket(self) -> None:
        """Every SOCKET_CHECK_SEC (an lstat and an fstat): bind the socket again when its
        file vanished or was replaced, and rotate a spawned daemon's stderr log."""
        stderr_log = self.data_dir / "run" / "daemon.stderr.log"
        failing = False
        while not self._stopping.wait(SOCKET_CHECK_SEC):
            rotate_log(stderr_log, STDERR_LOG_MAX_BYTES, STDERR_LOG_KEEP, fd=2)
            if self._socket_intact():
                continue
            with self._listen_lock:
                if self._stopping.is_set():
                    return
                old = self._listener
                try:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(self.path.parent, 0o700)  # a cleaner took the folder too
                    check_private(self.path.parent, "socket folder")
                    self._listen()
                except (OSError, StoreError) as exc:
                    if not failing:  # once per outage, not every SOCKET_CHECK_SEC
                        log.error("daemon.rebind_failed", socket=str(self.path), error=str(exc))
                    failing = True
                    continue
            failing = False
            log.warning("daemon.rebound", socket=str(self.path))
            if old is not None:
                # The accept loop waits on the old socket: wake it, it takes the new one.
                close_listener(old)

    def serve_forever(self) -> None:
        assert self._listener is not None
        threading.Thread(target=self._watch_idle, name="imprint-idle", daemon=True).start()
        backoff = ACCEPT_BACKOFF_SEC
        while not self._stopping.is_set():
            listener = self._listener
            try:
                conn, _ = listener.accept()
            except OSError as exc:
                if listener is not self._listener and not self._stopping.is_set():
                    continue  # bound again (its file had vanished): accept on the new one
                if exc.errno not in TRANSIENT_ACCEPT_ERRORS or self._stopping.is_set():
                    break  # the listener was closed: shutting down
                # Out of descriptors or buffers (a flood of connections somewhere in this
                # process): not the end. Wait for some to close, then accept again.
                self.accept_failures += 1
                log.warning(
                    "daemon.accept.failed",
                    error=errno.errorcode.get(exc.errno or 0, str(exc.errno)),
                    count=self.accept_failures,
                    retry_sec=backoff,
                )
                self._stopping.wait(backoff)
                backoff = min(backoff * 2, ACCEPT_BACKOFF_MAX_SEC)
                continue
            backoff = ACCEPT_BACKOFF_SEC
            if not self._admit(conn):
                with contextlib.suppress(OSError):
                    conn.close()
                continue
            threading.Thread(
                target=self._serve_connection, args=(conn,), name="imprint-session", daemon=True
            ).start()

    def _admit(self, conn: socket.socket) -> bool:
        """Only this user's processes, and at most max_connections at a time."""
        if not peer_allowed(conn, self._peer_uid):
            return False
        with self._state:
            if self._open >= self.max_connections:
                full = True
            else:
                full = False
                self._open += 1
        if full:
            log.warning("daemon.connection.refused", reason="cap", cap=self.max_connections)
            refuse(
                conn, f"daemon: {self.max_connections} connections are open (the cap); close some"
            )
            return False
        return True

    def _watch_idle(self) -> None:
        if self.idle_exit_sec is None:
            return
        with self._state:
            while not self._stopping.is_set():
                idle_for = time.monotonic() - self._last_change
                watching = self.watches is not None and self.watches.active()
                if self._active == 0 and not watching and idle_for >= self.idle_exit_sec:
                    log.info("daemon.idle_exit", idle_sec=round(idle_for, 1))
                    self.shutdown()
                    return
                # A watched folder keeps the daemon up: look again a full period later.
                left = self.idle_exit_sec if watching else self.idle_exit_sec - idle_for
                self._state.wait(timeout=max(0.5, left))

    def _serve_connection(self, conn: socket.socket) -> None:
        started = False
        front: Front | None = None
        try:
            got = read_hello(conn, self._hello_watch, self.hello_timeout_sec)
            if got is None:
                return
            raw, hello = got
            wrong = other_data_dir(hello, self.serves)
            if wrong is not None:
                # Before anything runs: a store through a copy must not land here.
                conn.sendall((json.dumps({"error": wrong, "serves": self.serves}) + "\n").encode())
                return
            with self._state:
                if self._stopping.is_set():
                    return
                self._active += 1
                self._last_change = time.monotonic()
                started = True
            for op, handle in HANDLERS.items():
                if isinstance(hello.get(op), dict):
                    handle(self, hello[op], conn, raw)
                    return
            ok: dict[str, object] = {"ok": True}
            if "serves" in hello:
                ok["serves"] = self.serves  # what the client checks (`hello.check_served`)
            conn.sendall((json.dumps(ok) + "\n").encode())
            if self.handshake is not None:
                front = Front(conn, raw, self.handshake)
            self._mcp_session(conn, raw, hello, front)
        except Exception as exc:
            gone = hang_up(exc)
            if gone is not None:
                # A client that ends its session mid-answer (Claude Code does, at most
                # disconnects) is no failure: one line, for whoever debugs a session.
                log.debug("daemon.session.disconnected", error=gone)
            else:
                log.exception("daemon.session.failed")
        finally:
            if front is not None:
                # The front's reader and its pipe hold the socket open (a file object of a
                # socket keeps it alive): shut it, so the client sees the end now.
                shut(conn)
                front.close()
            with contextlib.suppress(OSError):
                conn.close()
            with self._state:
                self._open -= 1
                if started:
                    self._active -= 1
                    self._last_change = time.monotonic()
                self._state.notify_all()
            if started:
                log.info("daemon.session.end")

    def _mcp_session(
        self,
        conn: socket.socket,
        raw: io.BufferedReader,
        hello: dict[str, Any],
        front: Front | None,
    ) -> None:
        """Serve one MCP session on the connection (through the front, with a handshake)."""
        reader: IO[str]
        writer: IO[str]
        if front is not None:
            reader, writer = front.reader, cast(IO[str], front.writer)
        else:
            reader = io.TextIOWrapper(raw, encoding="utf-8", newline="\n")
            writer = conn.makefile("w", encoding="utf-8", newline="\n")
        cwd = Path(hello.get("cwd") or os.getcwd())
        roots = [Path(r) for r in hello.get("roots", []) if isinstance(r, str)]
        # `imprint ingest PATH` allows PATH (and ingest.allowed_roots) only, as in-process.
        cwd_root = hello.get("cwd_root") is not False
        log.info(
            "daemon.session.start",
            client_pid=hello.get("pid"),
            cwd=str(cwd),
            roots=[str(r) for r in roots],
            cwd_root=cwd_root,
        )
        import anyio

        with self._state:
            self.sessions += 1
        try:
            anyio.run(self._session, reader, writer, cwd, roots, cwd_root)
        finally:
            with self._state:
                self.sessions -= 1

    async def _session(
        self, reader: IO[str], writer: IO[str], cwd: Path, roots: list[Path], cwd_root: bool
    ) -> None:
        import anyio

        # Imported by the warm-up thread (a failed import is retried, and reported, here).
        await anyio.to_thread.run_sync(self._warmup.server_imported.wait)
        from imprint.server import ImprintServer, build_server, serve_lines

        # The tools register in the background once the runtime is up (or at the first tool
        # call, which waits for them): `initialize` and tools/list never wait for it.
        server = build_server(self.wait_runtime, cwd, roots, cwd_root=cwd_root)
        async with anyio.create_task_group() as tasks:
            if isinstance(server, ImprintServer):
                tasks.start_soon(server.prepare_tools)
            await serve_lines(server, reader, writer)
            tasks.cancel_scope.cancel()  # a runtime still starting is not waited for

    def shutdown(self) -> None:
        self._stopping.set()
        self._hello_watch.close()
        with self._listen_lock:
            listener = self._listener
        if listener is not None:
            close_listener(listener)

    def close(self) -> None:
        """Reverse of start: stop accepting, stop the runtime, drop the socket, unlock."""
        self.shutdown()
        try:
            self._warmup.join()
            self._dashboard.stop()
            self.backups.stop()  # before the writers a backup under way copies through
            with self._watch_lock:  # _stopping is set: no watches start after this
                watches = self.watches
            if watches is not None:
                watches.stop()  # before the writers its batches write through
            if self.capture is not None:
                self.capture.stop()  # before the writers it writes through
            if self.runtime is not None:
                self.runtime.stop()
        finally:
            if self._socket_intact():
                self.path.unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                (run_dir(self.data_dir) / "daemon.json").unlink()
            self._lock.release()


def run_daemon(data_dir: Path, config: Config, *, idle_exit_sec: float | None) -> int:
    daemon = Daemon(data_dir, config, idle_exit_sec=idle_exit_sec)
    if not daemon.acquire():
        log.info("daemon.already_running")
        return 0
    from imprint._watchdog import enable, exit_after

    def on_sigterm(*_: object) -> None:
        # A service manager, `imprint stop`, a test teardown: close in order, and whatever
        # that waits on, be gone within the grace (every acknowledged write is journaled).
        exit_after(STOP_GRACE_SEC)
        daemon.shutdown()

    signal.signal(signal.SIGTERM, on_sigterm)
    enable()  # inside Chroma's calls (which keep the interpreter lock), SIGTERM ends us
    try:
        daemon.start()
        daemon.serve_forever()
    finally:
        daemon.close()
    return 0
