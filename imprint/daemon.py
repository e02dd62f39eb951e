"""One owner process per data dir, shared by every `imprint serve`.

Every assistant session starts its own `imprint serve`, but Chroma's embedded store allows
one writing process. So the first `imprint serve` starts a daemon that owns the data dir (its
store, its actors, later its one model copy) and listens on a Unix socket; each `imprint
serve` then bridges its stdin and stdout to one socket connection. The daemon serves each
connection as its own MCP session over the shared runtime and exits after
`server.idle_exit_sec` without connections.

Wire format on the socket: one JSON line `{"cwd": ..., "pid": ...}` from the bridge (tools
such as ingest_path resolve paths against the client's working directory), one JSON line
back (`{"ok": true}` or `{"error": "..."}`), then MCP's newline-delimited JSON-RPC, byte for
byte as on stdio.

Who may talk to whom: the socket lives in a folder only the user can enter
(`$XDG_RUNTIME_DIR/imprint`, else `{tmp}/imprint-<uid>`), checked on both ends (a real folder,
not a symlink, owned by the user, mode 0700), and each end asks the kernel who the other is
(SO_PEERCRED): the daemon serves only its own user, the bridge talks only to a daemon of its
own user. Before its hello a connection is bounded: one line of at most HELLO_MAX_BYTES within
hello_timeout_sec, at most max_connections open, and it does not keep the daemon alive.

Finding it: where the socket lives depends on the environment of whoever started the daemon,
so the daemon also writes `{data_dir}/run/daemon.json` (0600, atomically: its pid, its
socket, when it started), and clients look there first, whatever their own
XDG_RUNTIME_DIR or TMPDIR. A pid is believed only when it is this user's imprint process
that started when the file says. The daemon checks every SOCKET_CHECK_SEC that its socket
file is still its own and binds it again if it vanished (a tmp cleaner); `imprint stop`
needs no socket at all.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import os
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

from imprint._fs import atomic_write_text, private_dir, private_file
from imprint.errors import StoreError

if TYPE_CHECKING:
    from imprint.actors.lifecycle import Runtime
    from imprint.config import Config
    from imprint.store.embedder import Embedder

__all__ = [
    "Daemon",
    "ask_dashboard",
    "bridge_stdio",
    "connect",
    "daemon_alive",
    "peer_uid",
    "run_daemon",
    "running_daemon",
    "socket_dir",
    "socket_path",
    "stop_daemon",
]


class _Log:
    """structlog is imported at the first log call: the stdio bridge (this module's client
    half) never logs, and every import it skips is time before a client's `initialize`."""

    def __getattr__(self, name: str) -> Any:
        from imprint.logs import get_logger

        return getattr(get_logger("imprint.daemon"), name)


log = _Log()
CONNECT_WAIT_SEC = 90.0
SOCKET_CHECK_SEC = 2.0
STOP_GRACE_SEC = 30.0  # after SIGTERM the daemon exits within this, stuck or not
STDERR_LOG_MAX_BYTES = 4 * 1_048_576
STDERR_LOG_KEEP = 2
HELLO_TIMEOUT_SEC = 10.0
HELLO_MAX_BYTES = 64 * 1024
MAX_CONNECTIONS = 64
# accept() failing with these is the process (or the system) short of something for now.
TRANSIENT_ACCEPT_ERRORS = frozenset(
    {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM, errno.ECONNABORTED, errno.EPROTO}
)
ACCEPT_BACKOFF_SEC = 0.05
ACCEPT_BACKOFF_MAX_SEC = 1.0
_SUN_PATH_MAX = 104  # sockaddr_un.sun_path: 108 bytes on Linux, 104 on macOS


def _check_private(folder: Path, what: str) -> None:
    """The folder must be a real directory (not a symlink), owned by us, mode 0700."""
    try:
        info = os.lstat(folder)
    except OSError as exc:
        raise StoreError(f"daemon: cannot use the {what} {folder}: {exc.strerror}") from exc
    uid = os.getuid()
    if stat.S_ISLNK(info.st_mode):
        raise StoreError(
            f"daemon: the {what} {folder} is a symlink; refusing it (remove it and retry)"
        )
    if not stat.S_ISDIR(info.st_mode):
        raise StoreError(f"daemon: the {what} {folder} is not a directory; remove it and retry")
    if info.st_uid != uid:
        raise StoreError(
            f"daemon: the {what} {folder} is owned by uid {info.st_uid}, not you "
            f"(uid {uid}); refusing it (another user may be squatting it)"
        )
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise StoreError(
            f"daemon: the {what} {folder} has mode {stat.S_IMODE(info.st_mode):04o}; "
            "it must be 0700 (chmod 700 it or remove it)"
        )


def socket_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The user's private folder for daemon sockets, created 0700 and checked.

    `$XDG_RUNTIME_DIR/imprint` when XDG_RUNTIME_DIR is set (that folder is the user's own,
    checked too), else `{tmp}/imprint-<uid>`; anything not owned by the user, not 0700 or a
    symlink is refused with a one-line error instead of being used.
    """
    env = os.environ if environ is None else environ
    uid = os.getuid()
    runtime = env.get("XDG_RUNTIME_DIR", "")
    if runtime:
        base = Path(runtime)
        _check_private(base, "runtime folder $XDG_RUNTIME_DIR")
        folder = base / "imprint"
    else:
        folder = Path(tempfile.gettempdir()) / f"imprint-{uid}"
    with contextlib.suppress(FileExistsError):
        # Not private_dir: an existing folder is checked, never repaired (it may be a trap).
        os.mkdir(folder, 0o700)
    _check_private(folder, "socket folder")
    return folder


def socket_path(data_dir: Path, environ: Mapping[str, str] | None = None) -> Path:
    """Short and per data dir: Unix socket paths are limited to about 100 bytes."""
    digest = hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:16]
    path = socket_dir(environ) / f"{digest}.sock"
    if len(os.fsencode(path)) >= _SUN_PATH_MAX:
        raise StoreError(
            f"daemon: socket path {path} is longer than {_SUN_PATH_MAX - 1} bytes; "
            "set XDG_RUNTIME_DIR (or TMPDIR) to a shorter folder"
        )
    return path


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end of a Unix socket; None where the platform
    cannot tell (then the private socket folder is the only guard)."""
    if hasattr(socket, "SO_PEERCRED"):  # Linux: struct ucred {pid, uid, gid}
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return int(struct.unpack("3i", creds)[1])
    if hasattr(socket, "LOCAL_PEERCRED"):  # macOS/BSD: struct xucred {version, uid, ...}
        creds = sock.getsockopt(0, socket.LOCAL_PEERCRED, 76)  # sizeof(struct xucred)
        return int(struct.unpack("2I", creds[: struct.calcsize("2I")])[1])
    return None


def _run_dir(data_dir: Path) -> Path:
    return private_dir(data_dir / "run")


def _proc_start(pid: int) -> str | None:
    """When the process started, in clock ticks since boot (Linux); None elsewhere. With the
    pid it names one process for good: a pid reused later has another start."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat_line.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else None  # field 22 of proc(5), after pid and comm


def _exited(pid: int) -> bool:
    """Gone, or a zombie: exited, its parent (the client that spawned it) not yet told."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return False
    return stat_line.rpartition(")")[2].split()[:1] == ["Z"]


def _is_our_daemon(pid: int, proc_start: object) -> bool:
    """Whether `pid` is this user's imprint process, the one a run file described."""
    if pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    proc = Path(f"/proc/{pid}")
    if not proc.is_dir():
        return True  # no /proc (macOS): it lives, and may be signalled by us
    try:
        if proc.stat().st_uid != os.getuid():
            return False
        cmdline = (proc / "cmdline").read_bytes()
    except OSError:
        return False
    return b"imprint" in cmdline and (proc_start is None or _proc_start(pid) == proc_start)


def running_daemon(data_dir: Path) -> dict[str, Any] | None:
    """The run file of the process that owns the data dir, when that process still runs."""
    try:
        info = json.loads((data_dir / "run" / "daemon.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict) or not isinstance(info.get("pid"), int):
        return None
    return info if _is_our_daemon(info["pid"], info.get("proc_start")) else None


def _socket_paths(data_dir: Path, info: dict[str, Any] | None) -> list[Path]:
    """Where the data dir's owner may listen: where its run file says, then where this
    environment would put it. The named folder is checked as our own is (a real folder,
    ours, 0700), else refused; one that is gone (a tmp cleaner) is skipped: the daemon
    makes it again."""
    paths = []
    named = info.get("socket") if info is not None else None
    if isinstance(named, str) and named:
        path = Path(named)
        if not path.is_absolute() or len(os.fsencode(path)) >= _SUN_PATH_MAX:
            raise StoreError(f"daemon: {data_dir / 'run' / 'daemon.json'} names no usable socket")
        if os.path.lexists(path.parent):
            _check_private(path.parent, "socket folder")
            paths.append(path)
    own = socket_path(data_dir)
    if own not in paths:
        paths.append(own)
    return paths


def _rotate_log(path: Path, max_bytes: int, keep: int, fd: int | None = None) -> bool:
    """Rotate `path` when it is over `max_bytes`: .1 becomes .2 and so on, `keep` old files.
    With `fd` (a descriptor writing to that file: the daemon's stderr) the size is read
    there, and a fresh file takes its place on `fd`. Whether it rotated."""
    try:
        if fd is not None:
            held, named = os.fstat(fd), os.stat(path)
            if (held.st_dev, held.st_ino) != (named.st_dev, named.st_ino):
                return False  # fd writes elsewhere (a daemon no client spawned, say)
            size = held.st_size
        else:
            size = path.stat().st_size
    except OSError:
        return False
    if size <= max_bytes:
        return False
    for n in range(keep, 0, -1):
        older = path.with_name(f"{path.name}.{n}")
        newer = path if n == 1 else path.with_name(f"{path.name}.{n - 1}")
        with contextlib.suppress(OSError):
            os.replace(newer, older)
    if fd is not None:
        fresh = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.dup2(fresh, fd)
        finally:
            os.close(fresh)
    return True


class _Deadlines:
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
                        _shut(conn)
                soonest = min((due for due, _ in self._due.values()), default=None)
                self._cond.wait(None if soonest is None else max(0.0, soonest - now))


HANDSHAKE_FILE = Path(__file__).with_name("handshake.json")


def load_handshake(path: Path = HANDSHAKE_FILE) -> dict[str, Any] | None:
    """The static `initialize` and tools/list replies per protocol version (written by
    `imprint.server.write_handshake`); None when the file is missing or not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    versions = data.get("versions") if isinstance(data, dict) else None
    if not isinstance(versions, dict) or data.get("latest") not in versions:
        return None
    return dict(data)


_NO_ID = object()


def _reply(rid: object, result: object) -> bytes:
    return (json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}) + "\n").encode()


def _well_formed_initialize(params: object) -> bool:
    """What the SDK's own validation of `initialize` params needs; anything else goes to the
    SDK, which answers it in its own words."""
    if not isinstance(params, dict):
        return False
    info = params.get("clientInfo")
    return (
        isinstance(params.get("protocolVersion"), str)
        and isinstance(params.get("capabilities"), dict)
        and isinstance(info, dict)
        and isinstance(info.get("name"), str)
        and isinstance(info.get("version"), str)
    )


class _Front:
    """A session's first contact: answers `initialize` and a plain tools/list from the
    static snapshot (`handshake.json`) at once, and passes every other line to the SDK
    session behind it, which may still be importing (about a second of MCP's own imports,
    more on a busy machine).

    The SDK session still sees the client's `initialize` (replayed first, so it negotiates
    the same version and accepts the session); its own reply to it is dropped, the client
    already has one. A session that does not open with `initialize` (a 2026 protocol client)
    is passed through untouched, as is everything once a line is not a JSON object.
    """

    def __init__(self, conn: socket.socket, raw: io.BufferedReader, static: dict[str, Any]):
        self._conn = conn
        self._raw = raw
        self._static = static
        self._send_lock = threading.Lock()
        read_fd, write_fd = os.pipe()
        # What the SDK session reads: the client's lines, as the front passes them on.
        self.reader: IO[str] = open(read_fd, encoding="utf-8", newline="\n")  # noqa: SIM115
        self._pipe = open(write_fd, "wb", buffering=0)  # noqa: SIM115
        self.writer = _FrontOut(self)
        self._version: str | None = None  # negotiated by the static initialize
        self._decided = False  # the first request was seen
        self.drop_id: object = _NO_ID  # the replayed initialize's id: its SDK reply is dropped
        self._thread = threading.Thread(target=self._pump, name="imprint-front", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """The SDK session ended: its end of the pipe goes (a pump still writing stops),
        and so does the front's file object of the socket, once the pump has stopped."""
        with contextlib.suppress(OSError):
            self.reader.close()
        self._thread.join(timeout=5)  # the socket was shut: its read returns at once
        with contextlib.suppress(OSError):
            self._raw.close()

    def send(self, data: bytes) -> None:
        """One whole line to the client; the front and the SDK write whole lines in turn."""
        with self._send_lock:
            self._conn.sendall(data)

    def _pump(self) -> None:
        try:
            while line := self._raw.readline():
                reply = self._answer(line)
                if reply is not None:
                    self.send(reply)
                else:
                    self._pipe.write(line)
        except OSError:
            pass  # the client or the SDK session went away; both ends close below
        except Exception:
            log.exception("daemon.front.failed")
        finally:
            with contextlib.suppress(OSError):
                self._pipe.close()

    def _answer(self, line: bytes) -> bytes | None:
        """The static reply to this line, or None to pass it on (the replayed `initialize`
        is passed on as well, after its reply)."""
        if self._decided and (self._version is None or b"tools/list" not in line):
            # Not a session opened by our static initialize, or not a tools/list: passed on
            # unparsed (a tool call's arguments may be megabytes).
            return None
        try:
            msg = json.loads(line)
        except (ValueError, RecursionError):
            # Not JSON, or nested deeper than json can read: the session behind answers it
            # (a parse error), and this pump goes on with the next line.
            return None
        if not isinstance(msg, dict) or "id" not in msg or not isinstance(msg.get("method"), str):
            return None  # notifications, replies, batches
        method, params = msg["method"], msg.get("params")
        if not self._decided:
            self._decided = True
            if method != "initialize" or not _well_formed_initialize(params):
                return None
            versions = self._static["versions"]
            asked = cast(dict[str, Any], params)["protocolVersion"]
            self._version = asked if asked in versions else self._static["latest"]
            self.drop_id = msg["id"]
            self.send(_reply(msg["id"], versions[self._version]["initialize"]))
            return None  # replayed to the SDK session, whose own reply is dropped
        plain = params is None or (isinstance(params, dict) and set(params) <= {"_meta"})
        if method == "tools/list" and plain:
            assert self._version is not None
            return _reply(msg["id"], self._static["versions"][self._version]["tools/list"])
        return None


class _FrontOut(io.TextIOBase):
    """The SDK session's output: whole lines to the client, less its reply to the replayed
    `initialize`."""

    def __init__(self, front: _Front) -> None:
        super().__init__()
        self._front = front
        self._buffer = ""

    def write(self, text: str) -> int:
        self._buffer += text
        return len(text)

    def flush(self) -> None:
        lines, sep, rest = self._buffer.rpartition("\n")
        if not sep:
            return
        self._buffer = rest
        out = []
        for line in (lines + "\n").splitlines(keepends=True):
            if self._front.drop_id is not _NO_ID and self._is_init_reply(line):
                continue
            out.append(line)
        if out:
            self._front.send("".join(out).encode("utf-8"))

    def _is_init_reply(self, line: str) -> bool:
        try:
            msg = json.loads(line)
        except ValueError:
            return False
        if not isinstance(msg, dict) or msg.get("id") != self._front.drop_id:
            return False
        if "result" not in msg and "error" not in msg:
            return False
        self._front.drop_id = _NO_ID
        if "error" in msg:  # the static reply said yes where the SDK says no: worth knowing
            log.warning("daemon.front.initialize_refused", error=str(msg["error"])[:200])
        return True


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
        from filelock import FileLock

        self._lock = FileLock(_run_dir(data_dir) / "daemon.lock", thread_local=False, mode=0o600)
        self._active = 0  # sessions past their hello: only these keep the daemon alive
        self._open = 0  # every accepted connection, hello or not: the cap counts these
        self._last_change = time.monotonic()
        self._state = threading.Condition()
        self._stopping = threading.Event()
        self._hello_watch = _Deadlines()
        self.runtime: Runtime | None = None
        self._runtime_ready = threading.Event()  # set when started, or when starting failed
        self._runtime_error: BaseException | None = None
        self._warm_thread: threading.Thread | None = None
        self._embedder_thread: threading.Thread | None = None
        self._server_imported = threading.Event()
        self._embedder: Embedder | None = None  # preloaded for the runtime
        self._listener: socket.socket | None = None
        self._bound: tuple[int, int] | None = None  # (st_dev, st_ino) of our socket file
        self._listen_lock = threading.Lock()
        self.kind = "daemon"
        self.started_at = time.time()
        self.sessions = 0  # MCP sessions now connected
        self.accept_failures = 0  # transient accept() errors (EMFILE...), each logged
        self._dashboard: Any = None  # a DashboardServer while someone asked for one
        self._dashboard_users = 0
        self._dashboard_lock = threading.Lock()

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
            "proc_start": _proc_start(os.getpid()),
            "kind": self.kind,
        }
        atomic_write_text(_run_dir(self.data_dir) / "daemon.json", json.dumps(info))
        return True

    def start(self) -> None:
        """Listen at once; the runtime starts (and the embedder loads) in the background.

        A client's `initialize` and tools/list need neither MCP's server code, the store
        nor the embedder: the front answers them from `handshake.json` while those load.
        The first tool call waits for the runtime (`wait_runtime`). The embedder loads in a
        thread of its own beside the imports (its session setup and first inference run
        mostly outside the GIL, on the other core), and the active workspace is opened
        before anyone asks, so a client's first search pays for neither.
        """
        self._listen()
        threading.Thread(
            target=self._watch_socket, name="imprint-socket-watch", daemon=True
        ).start()
        if self.warm_embedder:
            self._embedder_thread = threading.Thread(
                target=self._load_embedder, name="imprint-embedder", daemon=True
            )
            self._embedder_thread.start()
        self._warm_thread = threading.Thread(target=self._warm, name="imprint-warm", daemon=True)
        self._warm_thread.start()

    def _load_embedder(self) -> None:
        try:
            from imprint.store.embedder import Embedder

            started = time.monotonic()
            embedder = Embedder.from_config(self.config.embedding)
            embedder.embed(["warm up"])  # loads the model, sizes its arena
            self._embedder = embedder
            log.info("daemon.embedder.ready", elapsed_ms=round((time.monotonic() - started) * 1000))
        except Exception as exc:  # the runtime loads it at first use and reports it then
            log.warning("daemon.embedder.failed", error=f"{type(exc).__name__}: {exc}")

    def _warm(self) -> None:
        try:
            # What a session needs first, so its imports do not queue behind the store's.
            # Sessions wait for these instead of importing them too: two threads importing
            # the same package tree in different orders can deadlock on its module locks.
            try:
                import mcp.server.stdio  # noqa: F401

                import imprint.server  # noqa: F401
            finally:
                self._server_imported.set()
            from imprint.actors.lifecycle import Runtime
            from imprint.server import tool_modules

            tool_modules()  # imported once here; each session registers them

            started = time.monotonic()
            if self._embedder_thread is not None:
                self._embedder_thread.join()  # usually done: the imports take longer
            self.runtime = Runtime(self.data_dir, self.config, embedder=self._embedder).start()
            log.info("daemon.runtime.ready", elapsed_ms=round((time.monotonic() - started) * 1000))
        except BaseException as exc:
            self._runtime_error = exc
            log.exception("daemon.runtime.failed")
            return
        finally:
            self._runtime_ready.set()
        if not self.warm_embedder or self._stopping.is_set():
            self._check_handshake()
            return
        try:
            self.runtime.embedder()  # where the preload failed: loads (or fails) again now
            started = time.monotonic()
            self.runtime.workspace("")  # Chroma and SQLite opened before the first search
            log.info(
                "daemon.workspace.ready", elapsed_ms=round((time.monotonic() - started) * 1000)
            )
        except Exception as exc:  # the first search reports it again, in its own words
            log.warning("daemon.warm.failed", error=f"{type(exc).__name__}: {exc}")
        self._check_handshake()  # last: a first search does not wait for it

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

    def wait_runtime(self, timeout: float | None = None) -> Runtime:
        """The started runtime, once the background start is done; its error if it failed."""
        if not self._runtime_ready.wait(timeout):
            raise StoreError("daemon: the store is still starting; try again")
        if self.runtime is None:
            error = self._runtime_error
            raise StoreError(f"daemon: the store failed to start: {error}") from error
        return self.runtime

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
            _rotate_log(stderr_log, STDERR_LOG_MAX_BYTES, STDERR_LOG_KEEP, fd=2)
            if self._socket_intact():
                continue
            with self._listen_lock:
                if self._stopping.is_set():
                    return
                old = self._listener
                try:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(self.path.parent, 0o700)  # a cleaner took the folder too
                    _check_private(self.path.parent, "socket folder")
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
                with contextlib.suppress(OSError):
                    old.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    old.close()

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
        try:
            uid = self._peer_uid(conn)
        except OSError:
            log.warning("daemon.peer.unknown")
            return False
        if uid is not None and uid != os.getuid():
            log.warning("daemon.peer.refused", peer_uid=uid, own_uid=os.getuid())
            return False
        with self._state:
            if self._open >= self.max_connections:
                full = True
            else:
                full = False
                self._open += 1
        if full:
            log.warning("daemon.connection.refused", reason="cap", cap=self.max_connections)
            msg = f"daemon: {self.max_connections} connections are open (the cap); close some"
            with contextlib.suppress(OSError):
                conn.settimeout(1.0)
                conn.sendall((json.dumps({"error": msg}) + "\n").encode())
            return False
        return True

    def _read_hello(self, conn: socket.socket) -> tuple[io.BufferedReader, dict[str, Any]] | None:
        """One line of at most HELLO_MAX_BYTES within hello_timeout_sec; None otherwise.

        The watch shuts the socket at the deadline, so a peer trickling bytes cannot stretch
        the wait the way a per-read timeout would let it.
        """
        raw = conn.makefile("rb")
        timed_out = self._hello_watch.add(conn, self.hello_timeout_sec)
        try:
            line = raw.readline(HELLO_MAX_BYTES + 1)
        except OSError:
            line = b""
        finally:
            self._hello_watch.remove(conn)
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
        started = False
        front: _Front | None = None
        try:
            got = self._read_hello(conn)
            if got is None:
                return
            raw, hello = got
            with self._state:
                if self._stopping.is_set():
                    return
                self._active += 1
                self._last_change = time.monotonic()
                started = True
            if isinstance(hello.get("dashboard"), dict):
                self._serve_dashboard(
                    hello["dashboard"],
                    io.TextIOWrapper(raw, encoding="utf-8", newline="\n"),
                    conn.makefile("w", encoding="utf-8", newline="\n"),
                )
                return
            conn.sendall((json.dumps({"ok": True}) + "\n").encode())
            reader: IO[str]
            writer: IO[str]
            if self.handshake is not None:
                front = _Front(conn, raw, self.handshake)
                reader, writer = front.reader, cast(IO[str], front.writer)
            else:
                reader = io.TextIOWrapper(raw, encoding="utf-8", newline="\n")
                writer = conn.makefile("w", encoding="utf-8", newline="\n")
            cwd = Path(hello.get("cwd") or os.getcwd())
            roots = [Path(r) for r in hello.get("roots", []) if isinstance(r, str)]
            log.info(
                "daemon.session.start",
                client_pid=hello.get("pid"),
                cwd=str(cwd),
                roots=[str(r) for r in roots],
            )
            import anyio

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
            if front is not None:
                # The front's reader and its pipe hold the socket open (a file object of a
                # socket keeps it alive): shut it, so the client sees the end now.
                _shut(conn)
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

    def _serve_dashboard(self, request: dict[str, Any], reader: IO[str], writer: IO[str]) -> None:
        """`imprint dashboard` asked: serve the dashboard (once) for as long as it stays
        connected; answer with a URL carrying a fresh one-time token. Only the owner can
        open this socket (0600), so only the owner gets a token."""
        from imprint.dashboard import DashboardServer, Owner

        port = request.get("port", 8766)
        with self._dashboard_lock:
            try:
                runtime = self.wait_runtime(timeout=120)  # started in the background
                if self._dashboard is None:
                    if not isinstance(port, int) or not 0 <= port <= 65535:
                        raise StoreError(f"port: {port!r} is not allowed; 0-65535")
                    owner = Owner(
                        kind=self.kind,
                        started_at=self.started_at,
                        clients=lambda: self.sessions,
                    )
                    self._dashboard = DashboardServer(runtime, owner, port=port).start()
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
        import anyio

        # Imported by the warm-up thread (a failed import is retried, and reported, here).
        await anyio.to_thread.run_sync(self._server_imported.wait)
        from imprint.server import ImprintServer, build_server, serve_lines

        # The tools register in the background once the runtime is up (or at the first tool
        # call, which waits for them): `initialize` and tools/list never wait for it.
        server = build_server(self.wait_runtime, cwd, roots)
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
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                listener.close()

    def close(self) -> None:
        """Reverse of start: stop accepting, stop the runtime, drop the socket, unlock."""
        self.shutdown()
        try:
            for thread in (self._warm_thread, self._embedder_thread):
                if thread is not None:
                    # A start under way cannot be interrupted; stop what it started.
                    thread.join()
            with self._dashboard_lock:
                if self._dashboard is not None:
                    self._dashboard.stop()
                    self._dashboard = None
            if self.runtime is not None:
                self.runtime.stop()
        finally:
            if self._socket_intact():
                self.path.unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                (_run_dir(self.data_dir) / "daemon.json").unlink()
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


def _shut(conn: socket.socket) -> None:
    with contextlib.suppress(OSError):
        conn.shutdown(socket.SHUT_RDWR)


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
        raise StoreError(
            f"daemon: {path} is served by uid {uid}, not you (uid {os.getuid()}); "
            "refusing to talk to it"
        )
    return sock


def _spawn_daemon(data_dir: Path) -> tuple[subprocess.Popen[bytes], int]:
    """The started daemon and where its stderr begins in the (appended) log file."""
    log_file = _run_dir(data_dir) / "daemon.stderr.log"
    _rotate_log(log_file, STDERR_LOG_MAX_BYTES, STDERR_LOG_KEEP)
    private_file(log_file)
    with log_file.open("ab") as err:
        start = err.tell()
        # imprint.launch, not imprint.cli: the daemon binds its socket before it imports
        # the command line's libraries (or the store's).
        proc = subprocess.Popen(
            [sys.executable, "-m", "imprint.launch", "daemon"],
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


def connect(data_dir: Path) -> socket.socket:
    """A connection to the data dir's daemon, starting one if none runs.

    A daemon that runs but does not answer yet (binding its socket again, or still
    starting) is waited for, never doubled."""
    sock = _try_paths(_socket_paths(data_dir, running_daemon(data_dir)))
    if sock is not None:
        return sock
    # One starter at a time: the others wait here, then find the daemon it started.
    from filelock import FileLock

    log_file = _run_dir(data_dir) / "daemon.stderr.log"
    with FileLock(
        _run_dir(data_dir) / "start.lock", thread_local=False, timeout=CONNECT_WAIT_SEC, mode=0o600
    ):
        deadline = time.monotonic() + CONNECT_WAIT_SEC
        proc: subprocess.Popen[bytes] | None = None
        log_start = 0
        spawned = 0
        while time.monotonic() < deadline:
            info = running_daemon(data_dir)
            sock = _try_paths(_socket_paths(data_dir, info))
            if sock is not None:
                return sock
            if proc is not None and proc.poll() is not None and proc.returncode != 0:
                # It died before listening (a bad config, a missing package): say why now,
                # not after CONNECT_WAIT_SEC.
                why = _last_error_line(log_file, log_start) or f"exit status {proc.returncode}"
                raise StoreError(f"daemon: it exited before listening: {why} (see {log_file})")
            if info is None and (proc is None or proc.poll() is not None) and spawned < 3:
                # Nobody owns the data dir (or the one started here left at once, having
                # found an owner that has gone since): start one.
                proc, log_start = _spawn_daemon(data_dir)
                spawned += 1
            time.sleep(0.02)  # waiting for another process to bind; nothing to wait on
    raise StoreError(
        f"daemon: none answered for {data_dir} within {CONNECT_WAIT_SEC:g} s; see {log_file}"
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
    """Whether a process owns this data dir as its daemon (nothing is started): its run file
    names a live imprint process of ours, or something of ours answers on the socket."""
    if running_daemon(data_dir) is not None:
        return True
    sock = _try_paths(_socket_paths(data_dir, None))
    if sock is None:
        return False
    sock.close()
    return True


def stop_daemon(data_dir: Path, wait_sec: float = 60.0) -> str:
    """SIGTERM the process that owns the data dir (the daemon, or `serve --http`) and wait
    until it has exited, its stores closed; a one-line report. Its socket is not needed:
    the pid comes from its run file, once that is known to be our daemon."""
    info_file = data_dir / "run" / "daemon.json"
    info = running_daemon(data_dir)
    if info is None:
        if daemon_alive(data_dir):
            raise StoreError(f"stop: a daemon answers but {info_file} names no running pid")
        return f"no imprint daemon is running for {data_dir}"
    pid = int(info["pid"])
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return f"no imprint daemon is running for {data_dir}"
    deadline = time.monotonic() + wait_sec
    while time.monotonic() < deadline:
        if _exited(pid):
            return f"stopped the imprint daemon (process {pid}) for {data_dir}"
        time.sleep(0.05)  # waiting for another process to exit; nothing to wait on
    raise StoreError(
        f"stop: process {pid} did not exit within {wait_sec:g} s of SIGTERM; "
        f"see {_run_dir(data_dir) / 'daemon.stderr.log'}"
    )


def _handshake(sock: socket.socket, hello: bytes) -> bool:
    """Send the hello and read the daemon's answer: True when it serves this session, False
    when it closed first (it was stopping), an error when it refused."""
    sock.settimeout(CONNECT_WAIT_SEC)
    try:
        # A daemon at its connection cap writes its refusal and closes without reading the
        # hello: sending may then fail, and the refusal is still there to read.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(hello)
        line = b""
        while not line.endswith(b"\n") and len(line) < 4096:
            byte = sock.recv(1)  # byte by byte: what follows the line is MCP, left unread
            if not byte:
                return False
            line += byte
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
        raise StoreError("daemon: its answer to the hello is not one this version knows")
    if answer.get("error"):
        raise StoreError(str(answer["error"]).splitlines()[0])
    return True


def bridge_stdio(data_dir: Path, allow: list[str] | None = None) -> int:
    """Copy stdin to the daemon and the daemon to stdout until either side closes."""
    roots = [str(Path(p).expanduser().resolve()) for p in allow or []]
    hello = json.dumps({"cwd": os.getcwd(), "pid": os.getpid(), "roots": roots}) + "\n"
    for _attempt in range(3):
        sock = connect(data_dir)
        if _handshake(sock, hello.encode("utf-8")):
            break
        # It was exiting idle as we came: the next connect finds or starts its successor.
        sock.close()
        time.sleep(0.2)  # letting the old daemon release its lock; nothing to wait on
    else:
        raise StoreError(f"daemon: it closed the connection at every hello; see {data_dir}/run")
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
