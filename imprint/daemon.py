"""One owner process per data dir, shared by every `imprint serve`.

Every assistant session starts its own `imprint serve`, but Chroma's embedded store allows
one writing process. So the first `imprint serve` starts a daemon that owns the data dir (its
store, its actors, later its one model copy) and listens on a Unix socket; each `imprint
serve` then bridges its stdin and stdout to one socket connection. The daemon serves each
connection as its own MCP session over the shared runtime and exits after
`server.idle_exit_sec` without connections.

Wire format on the socket: one JSON line `{"cwd": ..., "pid": ...}` from the bridge (tools
such as ingest_path resolve paths against the client's working directory), then MCP's
newline-delimited JSON-RPC, byte for byte as on stdio.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

import anyio
from filelock import FileLock, Timeout
from mcp.server.stdio import stdio_server

from imprint.actors.lifecycle import Runtime
from imprint.config import Config
from imprint.errors import StoreError
from imprint.logs import get_logger
from imprint.server import build_server

__all__ = [
    "Daemon",
    "ask_dashboard",
    "bridge_stdio",
    "connect",
    "daemon_alive",
    "run_daemon",
    "socket_path",
    "stop_daemon",
]

log = get_logger("imprint.daemon")
CONNECT_WAIT_SEC = 90.0


def socket_path(data_dir: Path) -> Path:
    """Short and per data dir: Unix socket paths are limited to about 100 bytes."""
    digest = hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:16]
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return Path(tempfile.gettempdir()) / f"imprint-{uid}-{digest}.sock"


def _run_dir(data_dir: Path) -> Path:
    path = data_dir / "run"
    path.mkdir(parents=True, exist_ok=True)
    return path


class Daemon:
    """Owns the runtime; serves MCP sessions on a Unix socket (and optionally HTTP)."""

    def __init__(self, data_dir: Path, config: Config, *, idle_exit_sec: float | None) -> None:
        self.data_dir = data_dir
        self.config = config
        self.idle_exit_sec = idle_exit_sec
        self.path = socket_path(data_dir)
        self._lock = FileLock(_run_dir(data_dir) / "daemon.lock", thread_local=False)
        self._active = 0
        self._last_change = time.monotonic()
        self._state = threading.Condition()
        self._stopping = threading.Event()
        self.runtime: Runtime | None = None
        self._listener: socket.socket | None = None
        self.kind = "daemon"
        self.started_at = time.time()
        self.sessions = 0  # MCP sessions now connected
        self._dashboard: Any = None  # a DashboardServer while someone asked for one
        self._dashboard_users = 0
        self._dashboard_lock = threading.Lock()

    def acquire(self) -> bool:
        """False when another daemon already owns this data dir."""
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            return False
        info = {"pid": os.getpid(), "socket": str(self.path)}
        (_run_dir(self.data_dir) / "daemon.json").write_text(json.dumps(info), encoding="utf-8")
        return True

    def start(self) -> None:
        self.runtime = Runtime(self.data_dir, self.config).start()
        self.path.unlink(missing_ok=True)  # a stale socket of a daemon that was killed
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(self.path))
        os.chmod(self.path, 0o600)
        listener.listen(64)
        self._listener = listener
        log.info("daemon.listening", socket=str(self.path), pid=os.getpid())

    def serve_forever(self) -> None:
        assert self._listener is not None
        threading.Thread(target=self._watch_idle, name="imprint-idle", daemon=True).start()
        while not self._stopping.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                break
            with self._state:
                self._active += 1
                self._last_change = time.monotonic()
            threading.Thread(
                target=self._serve_connection, args=(conn,), name="imprint-session", daemon=True
            ).start()

    def _watch_idle(self) -> None:
        if self.idle_exit_sec is None:
            return
        with self._state:
            while not self._stopping.is_set():
                idle_for = time.monotonic() - self._last_change
                if self._active == 0 and idle_for >= self.idle_exit_sec:
                    log.info("daemon.idle_exit", idle_sec=round(idle_for, 1))
                    self.shutdown()
                    return
                self._state.wait(timeout=max(0.5, self.idle_exit_sec - idle_for))

    def _serve_connection(self, conn: socket.socket) -> None:
        try:
            reader = conn.makefile("r", encoding="utf-8", newline="\n")
            writer = conn.makefile("w", encoding="utf-8", newline="\n")
            hello = json.loads(reader.readline() or "{}")
            if isinstance(hello.get("dashboard"), dict):
                self._serve_dashboard(hello["dashboard"], reader, writer)
                return
            cwd = Path(hello.get("cwd") or os.getcwd())
            roots = [Path(r) for r in hello.get("roots", []) if isinstance(r, str)]
            log.info(
                "daemon.session.start",
                client_pid=hello.get("pid"),
                cwd=str(cwd),
                roots=[str(r) for r in roots],
            )
            with self._state:
                self.sessions += 1
            try:
                anyio.run(self._session, reader, writer, cwd, roots)
            finally:
                with self._state:
                    self.sessions -= 1
        except Exception:
            log.exception("daemon.session.failed")
        finally:
            with contextlib.suppress(OSError):
                conn.close()
            with self._state:
                self._active -= 1
                self._last_change = time.monotonic()
                self._state.notify_all()
            log.info("daemon.session.end")

    def _serve_dashboard(self, request: dict[str, Any], reader: IO[str], writer: IO[str]) -> None:
        """`imprint dashboard` asked: serve the dashboard (once) for as long as it stays
        connected; answer with a URL carrying a fresh one-time token. Only the owner can
        open this socket (0600), so only the owner gets a token."""
        from imprint.dashboard import DashboardServer, Owner

        assert self.runtime is not None
        port = request.get("port", 8766)
        with self._dashboard_lock:
            try:
                if self._dashboard is None:
                    if not isinstance(port, int) or not 0 <= port <= 65535:
                        raise StoreError(f"port: {port!r} is not allowed; 0-65535")
                    owner = Owner(
                        kind=self.kind,
                        started_at=self.started_at,
                        clients=lambda: self.sessions,
                    )
                    self._dashboard = DashboardServer(self.runtime, owner, port=port).start()
                self._dashboard_users += 1
                reply = {"url": self._dashboard.url(), "port": self._dashboard.port}
                if port and port != self._dashboard.port:
                    reply["note"] = f"already serving on port {self._dashboard.port}"
            except Exception as exc:
                reply = {"error": str(exc)}
        writer.write(json.dumps(reply) + "\n")
        writer.flush()
        if "error" in reply:
            return
        try:
            while reader.readline():  # until `imprint dashboard` exits
                pass
        finally:
            with self._dashboard_lock:
                self._dashboard_users -= 1
                if self._dashboard_users == 0 and self._dashboard is not None:
                    self._dashboard.stop()
                    self._dashboard = None

    async def _session(
        self, reader: IO[str], writer: IO[str], cwd: Path, roots: list[Path]
    ) -> None:
        assert self.runtime is not None
        server = build_server(self.runtime, cwd, roots)
        async with stdio_server(stdin=anyio.wrap_file(reader), stdout=anyio.wrap_file(writer)) as (
            read_stream,
            write_stream,
        ):
            # MCPServer.run_stdio_async does exactly this over the process's own stdio.
            lowlevel = server._lowlevel_server
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

    def shutdown(self) -> None:
        self._stopping.set()
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                self._listener.close()

    def close(self) -> None:
        """Reverse of start: stop accepting, stop the runtime, drop the socket, unlock."""
        self.shutdown()
        try:
            with self._dashboard_lock:
                if self._dashboard is not None:
                    self._dashboard.stop()
                    self._dashboard = None
            if self.runtime is not None:
                self.runtime.stop()
        finally:
            self.path.unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                (_run_dir(self.data_dir) / "daemon.json").unlink()
            self._lock.release()


def run_daemon(data_dir: Path, config: Config, *, idle_exit_sec: float | None) -> int:
    daemon = Daemon(data_dir, config, idle_exit_sec=idle_exit_sec)
    if not daemon.acquire():
        log.info("daemon.already_running")
        return 0
    # SIGTERM (a service manager, a test teardown) closes the daemon in order.
    signal.signal(signal.SIGTERM, lambda *_: daemon.shutdown())
    try:
        daemon.start()
        daemon.serve_forever()
    finally:
        daemon.close()
    return 0


def _try_connect(path: Path) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except OSError:
        sock.close()
        return None
    return sock


def _spawn_daemon(data_dir: Path) -> None:
    log_file = _run_dir(data_dir) / "daemon.stderr.log"
    with log_file.open("ab") as err:
        subprocess.Popen(
            [sys.executable, "-m", "imprint.cli", "daemon"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
            env={**os.environ, "IMPRINT_DATA_DIR": str(data_dir)},
            cwd=str(data_dir),
        )


def connect(data_dir: Path) -> socket.socket:
    """A connection to the data dir's daemon, starting one if none answers."""
    path = socket_path(data_dir)
    sock = _try_connect(path)
    if sock is not None:
        return sock
    # One starter at a time: the others wait here, then find the daemon it started.
    with FileLock(_run_dir(data_dir) / "start.lock", thread_local=False, timeout=CONNECT_WAIT_SEC):
        sock = _try_connect(path)
        if sock is not None:
            return sock
        _spawn_daemon(data_dir)
        deadline = time.monotonic() + CONNECT_WAIT_SEC
        while time.monotonic() < deadline:
            sock = _try_connect(path)
            if sock is not None:
                return sock
            time.sleep(0.05)  # waiting for another process to bind; nothing to wait on
    raise StoreError(
        f"daemon: none answered on {path} within {CONNECT_WAIT_SEC:g} s; "
        f"see {_run_dir(data_dir) / 'daemon.stderr.log'}"
    )


def _pump(src: Any, dst: Any, on_eof: Any) -> None:
    try:
        while True:
            chunk = src(65536)
            if not chunk:
                break
            dst(chunk)
    except OSError:
        pass
    finally:
        on_eof()


def daemon_alive(data_dir: Path) -> bool:
    """Whether a daemon answers for this data dir (nothing is started)."""
    sock = _try_connect(socket_path(data_dir))
    if sock is None:
        return False
    sock.close()
    return True


def stop_daemon(data_dir: Path, wait_sec: float = 60.0) -> str:
    """SIGTERM the process that owns the data dir (the daemon, or `serve --http`) and wait
    until it has exited, its stores closed; a one-line report."""
    info = _run_dir(data_dir) / "daemon.json"
    if not daemon_alive(data_dir):
        return f"no imprint daemon is running for {data_dir}"
    try:
        pid = int(json.loads(info.read_text(encoding="utf-8"))["pid"])
    except (OSError, ValueError, KeyError) as exc:
        raise StoreError(f"stop: a daemon answers but {info} names no pid") from exc
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return f"no imprint daemon is running for {data_dir}"
    deadline = time.monotonic() + wait_sec
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return f"stopped the imprint daemon (process {pid}) for {data_dir}"
        time.sleep(0.05)  # waiting for another process to exit; nothing to wait on
    raise StoreError(
        f"stop: process {pid} did not exit within {wait_sec:g} s of SIGTERM; "
        f"see {_run_dir(data_dir) / 'daemon.stderr.log'}"
    )


def bridge_stdio(data_dir: Path, allow: list[str] | None = None) -> int:
    """Copy stdin to the daemon and the daemon to stdout until either side closes."""
    sock = connect(data_dir)
    roots = [str(Path(p).expanduser().resolve()) for p in allow or []]
    hello = json.dumps({"cwd": os.getcwd(), "pid": os.getpid(), "roots": roots}) + "\n"
    sock.sendall(hello.encode("utf-8"))
    stdin_fd, stdout_fd = sys.stdin.fileno(), sys.stdout.fileno()

    def write_out(data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(stdout_fd, view) :]

    def half_close() -> None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_WR)

    upstream = threading.Thread(
        target=_pump,
        args=(lambda n: os.read(stdin_fd, n), sock.sendall, half_close),
        daemon=True,
    )
    upstream.start()
    _pump(sock.recv, write_out, lambda: None)
    sock.close()
    return 0


def ask_dashboard(data_dir: Path, port: int) -> tuple[socket.socket, dict[str, Any]]:
    """Ask the data dir's owner (starting the daemon if none runs) to serve the dashboard.
    The owner serves it while the returned socket stays open."""
    sock = connect(data_dir)
    sock.sendall((json.dumps({"dashboard": {"port": port}, "pid": os.getpid()}) + "\n").encode())
    line = b""
    while not line.endswith(b"\n"):
        chunk = sock.recv(4096)
        if not chunk:
            break
        line += chunk
    try:
        reply = json.loads(line or b"{}")
    except ValueError:
        reply = {}
    if "url" not in reply:
        sock.close()
        why = reply.get("error") or "the owner closed the connection; see its log"
        raise StoreError(f"dashboard: {why}")
    return sock, reply
