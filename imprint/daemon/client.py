"""The client half: find the data dir's daemon (starting one if none runs), send the hello,
then bridge stdio to it, poke it, or stop it (`imprint.daemon.asks` holds the one-line
requests and the plain tool call).

This is what `imprint serve` runs at every assistant session start, before a client gets its
`initialize` reply: the standard library only (no MCP, typer, pydantic, structlog or store),
and of it only what a warm daemon's bridge needs: `subprocess` (2-3 ms of imports) is loaded
where a daemon is started.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from imprint._fs import atomic_write_text, private_file
from imprint.daemon.hello import CONNECT_WAIT_SEC, OtherDataDir, send_hello
from imprint.daemon.requests import CaptureRequest, SessionHello, hello_line
from imprint.daemon.runfile import (
    KILL_AFTER_SEC,
    STDERR_LOG_KEEP,
    STDERR_LOG_MAX_BYTES,
    exited,
    identity,
    is_our_daemon,
    proc_start,
    rotate_log,
    run_dir,
    running_daemon,
)
from imprint.daemon.security import peer_uid, socket_paths
from imprint.errors import DaemonError

if TYPE_CHECKING:
    import subprocess

__all__ = [
    "bridge_stdio",
    "connect",
    "daemon_alive",
    "open_session",
    "poke_capture",
    "stop_daemon",
]


def _try_connect(path: Path) -> socket.socket | None:
    """A connection to a daemon of this user at `path`; None when nothing listens there.

    A listener of another user is refused with an error before anything is sent to it.
    """
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except OSError:
        sock.close()
        return None
    try:
        uid = peer_uid(sock)
    except OSError:
        uid = None
    if uid is not None and uid != os.getuid():
        sock.close()
        raise DaemonError(
            f"daemon: {path} is served by uid {uid}, not you (uid {os.getuid()}); "
            "refusing to talk to it"
        )
    return sock


def _spawn_daemon(data_dir: Path) -> tuple[subprocess.Popen[bytes], int]:
    """The started daemon and where its stderr begins in the (appended) log file."""
    import subprocess

    log_file = run_dir(data_dir) / "daemon.stderr.log"
    rotate_log(log_file, STDERR_LOG_MAX_BYTES, STDERR_LOG_KEEP)
    private_file(log_file)
    with log_file.open("ab") as err:
        start = err.tell()
        # imprint.daemon, not imprint.cli: the daemon binds its socket before it imports
        # the command line's libraries (or the store's).
        proc = subprocess.Popen(
            [sys.executable, "-m", "imprint.daemon"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
            env={**os.environ, "IMPRINT_DATA_DIR": str(data_dir)},
            cwd=str(data_dir),
        )
    return proc, start


def _last_error_line(log_file: Path, start: int) -> str:
    try:
        with log_file.open("rb") as handle:
            handle.seek(start)
            text = handle.read(64 * 1024).decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _try_paths(paths: list[Path]) -> socket.socket | None:
    for path in paths:
        sock = _try_connect(path)
        if sock is not None:
            return sock
    return None


def connect(data_dir: Path, *, trust_run_file: bool = True) -> socket.socket:
    """A connection to the data dir's daemon, starting one if none runs.

    A daemon that runs but does not answer yet (binding its socket again, or still
    starting) is waited for, never doubled. Without `trust_run_file` (its daemon answered
    that it serves another data dir) only this data dir's own socket path is tried."""

    def named() -> dict[str, Any] | None:
        return running_daemon(data_dir) if trust_run_file else None

    sock = _try_paths(socket_paths(data_dir, named()))
    if sock is not None:
        return sock
    # One starter at a time: the others wait here, then find the daemon it started.
    from filelock import FileLock

    log_file = run_dir(data_dir) / "daemon.stderr.log"
    with FileLock(
        run_dir(data_dir) / "start.lock", thread_local=False, timeout=CONNECT_WAIT_SEC, mode=0o600
    ):
        deadline = time.monotonic() + CONNECT_WAIT_SEC
        proc: subprocess.Popen[bytes] | None = None
        log_start = 0
        spawned = 0
        while time.monotonic() < deadline:
            info = named()
            sock = _try_paths(socket_paths(data_dir, info))
            if sock is not None:
                return sock
            if proc is not None and proc.poll() is not None and proc.returncode != 0:
                # It died before listening (a bad config, a missing package): say why now,
                # not after CONNECT_WAIT_SEC.
                why = _last_error_line(log_file, log_start) or f"exit status {proc.returncode}"
                raise DaemonError(f"daemon: it exited before listening: {why} (see {log_file})")
            if info is None and (proc is None or proc.poll() is not None) and spawned < 3:
                # Nobody owns the data dir (or the one started here left at once, having
                # found an owner that has gone since): start one.
                proc, log_start = _spawn_daemon(data_dir)
                spawned += 1
            time.sleep(0.02)  # waiting for another process to bind; nothing to wait on
    raise DaemonError(
        f"daemon: none answered for {data_dir} within {CONNECT_WAIT_SEC:g} s; see {log_file}"
    )


def _spawned_alive(data_dir: Path) -> bool:
    """Whether the daemon a poke started last still runs (it may not own the data dir yet)."""
    try:
        info = json.loads((run_dir(data_dir) / "spawned.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(info, dict):
        return False
    if "serves" in info and info["serves"] != identity(data_dir):
        return False  # copied with its folder: it names the original's daemon
    pid = info.get("pid")
    return isinstance(pid, int) and is_our_daemon(pid, info.get("proc_start")) and not exited(pid)


def poke_capture(data_dir: Path) -> bool:
    """Tell the data dir's daemon that captures are queued, or start one (it drains the
    queue once it is up); never waits for either. True when a running daemon was told."""
    sock = _try_paths(socket_paths(data_dir, running_daemon(data_dir)))
    if sock is not None:
        with contextlib.closing(sock), contextlib.suppress(OSError):
            sock.settimeout(1.0)
            # No answer is read (nothing to wait for); a daemon of another data dir ignores it.
            sock.sendall(hello_line(CaptureRequest(), identity(data_dir)))
        return True
    if running_daemon(data_dir) is not None or _spawned_alive(data_dir):
        return False  # one is binding its socket again, or starting: it drains at its start
    # Whoever holds the start lock is starting one already. A plain flock (what filelock
    # takes on this file too, in `connect`): importing filelock costs a hook 50-150 ms.
    lock_fd = os.open(run_dir(data_dir) / "start.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        if running_daemon(data_dir) is None and not _spawned_alive(data_dir):
            proc, _ = _spawn_daemon(data_dir)
            # Until it writes its run file, this names it: the next hook's poke (a few
            # ms later) finds it starting instead of starting another.
            spawned = {
                "pid": proc.pid,
                "proc_start": proc_start(proc.pid),
                "serves": identity(data_dir),
            }
            atomic_write_text(run_dir(data_dir) / "spawned.json", json.dumps(spawned))
            # Reaped when it exits, should this process (a test, a long-lived caller)
            # outlive it; a hook's process exits first and leaves it to init.
            threading.Thread(target=proc.wait, name="imprint-spawned", daemon=True).start()
    finally:
        os.close(lock_fd)  # and with it the lock
    return False


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
    """Whether a process owns this data dir as its daemon (nothing is started): its run file
    names a live imprint process of ours, or something of ours answers on the socket."""
    if running_daemon(data_dir) is not None:
        return True
    sock = _try_paths(socket_paths(data_dir, None))
    if sock is None:
        return False
    sock.close()
    return True


KILL_WAIT_SEC = 30.0  # after SIGKILL: only a process stuck in the kernel takes longer


def _wait_exit(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not exited(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)  # waiting for another process to exit; nothing to wait on
    return True


def stop_daemon(data_dir: Path, wait_sec: float = KILL_AFTER_SEC) -> str:
    """SIGTERM the process that owns the data dir (the daemon, or `serve --http`) and wait
    until it has exited, its stores closed; SIGKILL it when it has not within `wait_sec`
    (every acknowledged write is journaled: its next start finishes or rolls back the one
    in flight). A one-line report. Its socket is not needed: the pid comes from its run
    file, once that is known to be this data dir's daemon."""
    info_file = data_dir / "run" / "daemon.json"
    info = running_daemon(data_dir)
    if info is None:
        if daemon_alive(data_dir):
            raise DaemonError(f"stop: a daemon answers but {info_file} names no running pid")
        return f"no imprint daemon is running for {data_dir}"
    pid = int(info["pid"])
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return f"no imprint daemon is running for {data_dir}"
    if _wait_exit(pid, wait_sec):
        return f"stopped the imprint daemon (process {pid}) for {data_dir}"
    log_file = run_dir(data_dir) / "daemon.stderr.log"
    if is_our_daemon(pid, info.get("proc_start")):  # still the one we signalled
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    if _wait_exit(pid, KILL_WAIT_SEC):
        return (
            f"killed the imprint daemon (process {pid}) for {data_dir}: it did not exit "
            f"within {wait_sec:g} s of SIGTERM (see {log_file}); its next start finishes "
            "the write it was in"
        )
    raise DaemonError(
        f"stop: process {pid} did not exit within {wait_sec:g} s of SIGTERM nor "
        f"{KILL_WAIT_SEC:g} s of SIGKILL (stuck in the kernel?); see {log_file}"
    )


def open_session(
    data_dir: Path, allow: list[str] | None = None, *, cwd_root: bool = True
) -> socket.socket:
    """A connection to the data dir's daemon (started if none runs) past its hello: what
    follows on it is one MCP session, newline-delimited JSON-RPC. `allow`: folders this
    session may also ingest under; without `cwd_root` the working directory is not one of
    them by default (`imprint ingest PATH` allows PATH and ingest.allowed_roots only)."""
    roots = [str(Path(p).expanduser().resolve()) for p in allow or []]
    serves = identity(data_dir)
    hello = SessionHello(os.getcwd(), os.getpid(), roots, serves, cwd_root is not False).line()
    trust = True
    for _attempt in range(3):
        sock = connect(data_dir, trust_run_file=trust)
        try:
            if send_hello(sock, hello, serves):
                return sock
        except OtherDataDir:
            trust = False  # the run file led to another data dir's daemon: start our own
            sock.close()
            continue
        # It was exiting idle as we came: the next connect finds or starts its successor.
        sock.close()
        time.sleep(0.2)  # letting the old daemon release its lock; nothing to wait on
    raise DaemonError(f"daemon: it closed the connection at every hello; see {data_dir}/run")


def bridge_stdio(data_dir: Path, allow: list[str] | None = None) -> int:
    """Copy stdin to the daemon and the daemon to stdout until either side closes. With no
    daemon running, the session's opening is answered here while one starts."""
    if not daemon_alive(data_dir):
        from imprint.server.handshake import load_handshake

        static = load_handshake()
        if static is not None:
            return _bridge_cold(data_dir, allow, static)
    sock = open_session(data_dir, allow)
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


class _Stdout:
    """The client's end for the bridge's front: whole lines to stdout."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def sendall(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]


def _bridge_cold(data_dir: Path, allow: list[str] | None, static: dict[str, Any]) -> int:
    """The bridge while the daemon starts (seconds on a busy machine, and Claude Code's `-p`
    does not wait for a server: its first request then had no Imprint tools). The daemon's
    own front (`imprint.daemon.front`) runs here, on stdio: it answers `initialize` and
    tools/list from the handshake snapshot at once and holds every other line until the
    daemon answers; the opening is replayed to the daemon, whose reply to it is dropped."""
    import codecs

    from imprint.daemon.front import Front

    stdin = open(sys.stdin.fileno(), "rb", closefd=False)  # noqa: SIM115
    front = Front(_Stdout(sys.stdout.fileno()), stdin, static)  # type: ignore[arg-type]
    started: list[socket.socket] = []
    failed: list[BaseException] = []
    ready = threading.Event()

    def upstream() -> None:
        try:
            sock = open_session(data_dir, allow)
        except BaseException as exc:  # said by the main thread, which exits on it
            failed.append(exc)
            ready.set()
            return
        started.append(sock)
        ready.set()
        passed = front.reader.fileno()  # the lines the front did not answer, in order
        _pump(lambda n: os.read(passed, n), sock.sendall, lambda: _shut_write(sock))

    threading.Thread(target=upstream, name="imprint-bridge-up", daemon=True).start()
    ready.wait()
    if failed:
        raise failed[0]
    sock = started[0]
    decode = codecs.getincrementaldecoder("utf-8")("replace").decode

    def downstream(chunk: bytes) -> None:
        front.writer.write(decode(chunk))
        front.writer.flush()  # whole lines out, less the reply to the replayed opening

    _pump(sock.recv, downstream, lambda: None)
    sock.close()
    return 0


def _shut_write(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_WR)
