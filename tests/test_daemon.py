"""The daemon's socket: a private folder, peer checks on both ends, a bounded hello.

The squatting attack (issue 10, point 0): another local user binds the socket path a bridge
will use before the daemon does, and reads the bridge's hello and every MCP message after it.
Where the test runs as root it creates a real second user for the attacker (and removes it);
elsewhere those cases are skipped and the fake peer-credential tests still run.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from imprint import daemon as daemon_mod
from imprint.daemon import client as client_mod
from imprint.daemon import hello as hello_mod
from imprint.daemon import socket_path
from imprint.errors import StoreError
from imprint.logs import configure_logging, log_path
from tests.support.daemon import StartDaemon
from tests.support.second_user import OtherUser
from tests.support.wire import initialize_request, read_until_closed

pytestmark = pytest.mark.timeout(120)

INITIALIZE = json.dumps(initialize_request("victim")) + "\n"


def _digest(data_dir: Path) -> str:
    return hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:16]


# --- the socket folder ----------------------------------------------------------------------


def test_socket_folder_is_created_private_and_reused(private_env: Path, tmp_path: Path) -> None:
    """Without XDG_RUNTIME_DIR the socket sits in {tmp}/imprint-<uid>, created 0700."""
    path = socket_path(tmp_path / "data")
    folder = private_env / f"imprint-{os.getuid()}"
    assert path == folder / f"{_digest(tmp_path / 'data')}.sock"
    assert folder.stat().st_mode & 0o777 == 0o700
    assert socket_path(tmp_path / "data") == path  # an existing private folder is fine


def test_xdg_runtime_dir_is_used_when_set(tmp_path: Path) -> None:
    """With XDG_RUNTIME_DIR set (and private), the socket goes to $XDG_RUNTIME_DIR/imprint."""
    runtime = Path(tempfile.mkdtemp(prefix="xdg-", dir="/tmp"))
    try:
        path = socket_path(tmp_path / "data", environ={"XDG_RUNTIME_DIR": str(runtime)})
        assert path.parent == runtime / "imprint"
        assert path.parent.stat().st_mode & 0o777 == 0o700
        os.chmod(runtime, 0o755)
        with pytest.raises(StoreError, match=r"runtime folder .* has mode 0755; it must be 0700"):
            socket_path(tmp_path / "data", environ={"XDG_RUNTIME_DIR": str(runtime)})
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


def test_a_socket_folder_open_to_others_is_refused(private_env: Path) -> None:
    """A socket folder of ours that others may enter (0777) is refused, never repaired."""
    folder = private_env / f"imprint-{os.getuid()}"
    folder.mkdir(mode=0o700)
    os.chmod(folder, 0o777)
    with pytest.raises(StoreError) as info:
        daemon_mod.socket_dir()
    assert "has mode 0777; it must be 0700" in str(info.value)
    assert "\n" not in str(info.value)
    assert folder.stat().st_mode & 0o777 == 0o777


def test_a_symlinked_socket_folder_is_refused(private_env: Path, tmp_path: Path) -> None:
    """{tmp}/imprint-<uid> as a symlink (even to a private folder) is refused."""
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    (private_env / f"imprint-{os.getuid()}").symlink_to(target)
    with pytest.raises(StoreError, match=r"is a symlink; refusing it"):
        daemon_mod.socket_dir()


# --- a second, real user ----------------------------------------------------------------------


SQUATTER = textwrap.dedent(
    """
    # The attacker: bind the given socket paths, record what arrives, answer nothing.
    import os, socket, sys, threading
    record, layout, *paths = sys.argv[1:]
    os.umask(0)
    if layout == "open-folder":
        os.mkdir(os.path.dirname(paths[0]), 0o777)
    elif layout.startswith("symlink:"):
        real = layout.split(":", 1)[1]
        os.mkdir(real, 0o777)
        os.symlink(real, os.path.dirname(paths[0]))
    listeners = []
    for path in paths:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(path)
        os.chmod(path, 0o777)
        s.listen(8)
        listeners.append(s)
    def serve(s):
        while True:
            conn, _ = s.accept()
            conn.settimeout(5)
            data = b""
            try:
                while chunk := conn.recv(65536):
                    data += chunk
            except OSError:
                pass
            with open(record, "ab") as f:
                f.write(data)
    for s in listeners:
        threading.Thread(target=serve, args=(s,), daemon=True).start()
    print("ready", flush=True)
    sys.stdin.read()  # until the test closes our stdin
    """
)


def _squat(user: OtherUser, shared: Path, layout: str, *paths: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        user.command("-c", SQUATTER, str(shared / "stolen.bin"), layout, *map(str, paths)),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()  # the squatter's "ready": it listens now
    if line.strip() != "ready":
        proc.kill()
        raise AssertionError(f"squatter did not start: {proc.communicate()[1]}")
    return proc


def _bridge(data_dir: Path, shared: Path) -> subprocess.CompletedProcess[str]:
    """The victim: `imprint serve` sending an MCP initialize, as the stdio client would."""
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    env.update(
        {"TMPDIR": str(shared), "IMPRINT_DATA_DIR": str(data_dir), "IMPRINT_LOG_FILE": "false"}
    )
    command = [sys.executable, "-m", "imprint.cli", "serve"]
    try:
        return subprocess.run(
            command,
            input=INITIALIZE,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        # Talking to a squatter that never answers: the callers check what it stole first.
        return subprocess.CompletedProcess(command, -1, "", f"timed out: {exc}")


def _stolen(shared: Path, squatter: subprocess.Popen[str]) -> bytes:
    squatter.communicate(input="", timeout=30)
    path = shared / "stolen.bin"
    return path.read_bytes() if path.exists() else b""


@pytest.mark.parametrize("layout", ["open-folder", "symlink"])
def test_bridge_refuses_a_socket_folder_another_user_made(
    layout: str, other_user: OtherUser, shared_tmp: Path, tmp_path: Path
) -> None:
    """A second user makes {tmp}/imprint-<uid> first (0777, or a symlink to its own folder)
    and listens at the socket path (and at the old /tmp/imprint-<uid>-<digest>.sock name):
    `imprint serve` refuses with one line and sends the squatter nothing."""
    data_dir = tmp_path / "data"
    digest = _digest(data_dir)
    folder = shared_tmp / f"imprint-{os.getuid()}"
    old_style = shared_tmp / f"imprint-{os.getuid()}-{digest}.sock"
    spec = layout if layout == "open-folder" else f"symlink:{shared_tmp / 'attacker'}"
    squatter = _squat(other_user, shared_tmp, spec, folder / f"{digest}.sock", old_style)
    try:
        result = _bridge(data_dir, shared_tmp)
    finally:
        stolen = _stolen(shared_tmp, squatter)
    assert stolen == b"", f"the squatter received {stolen[:200]!r}"
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.splitlines()) == 1, result.stderr
    expected = (
        f"is owned by uid {other_user.uid}, not you" if layout == "open-folder" else "is a symlink"
    )
    assert result.stderr.startswith("error: daemon: the socket folder") and expected in (
        result.stderr
    )


def test_bridge_refuses_a_daemon_of_another_user(
    other_user: OtherUser, shared_tmp: Path, tmp_path: Path
) -> None:
    """Even at the right path in our private folder, a listener of another uid (its socket
    moved in there) is refused after SO_PEERCRED, before the hello is sent."""
    data_dir = tmp_path / "data"
    squat_dir = shared_tmp / "sq"
    squat_dir.mkdir(mode=0o777)
    os.chmod(squat_dir, 0o777)
    squatter = _squat(other_user, shared_tmp, "as-is", squat_dir / "s.sock")
    try:
        target = socket_path_under(shared_tmp, data_dir)
        os.rename(squat_dir / "s.sock", target)
        result = _bridge(data_dir, shared_tmp)
    finally:
        stolen = _stolen(shared_tmp, squatter)
    assert stolen == b"", f"the squatter received {stolen[:200]!r}"
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert f"is served by uid {other_user.uid}, not you" in result.stderr


def socket_path_under(shared: Path, data_dir: Path) -> Path:
    """Our real socket path with TMPDIR=shared (the folder is created private on the way)."""
    saved = tempfile.tempdir
    tempfile.tempdir = str(shared)
    try:
        return socket_path(data_dir, environ={})
    finally:
        tempfile.tempdir = saved


# --- the daemon's end: peers, hello, cap, idle exit ------------------------------------------


def _client(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(path))
    sock.settimeout(30)  # a bound for a failing test, never reached by a passing one
    return sock


def _hello() -> bytes:
    return (json.dumps({"cwd": "/", "pid": os.getpid(), "roots": []}) + "\n").encode()


def test_daemon_answers_its_own_user_then_speaks_mcp(serve: StartDaemon) -> None:
    """The daemon's own user gets {"ok": true} after the hello, then MCP as before."""
    d, _ = serve()
    with _client(d.path) as sock, sock.makefile("rb") as reader:
        sock.sendall(_hello() + INITIALIZE.encode())
        assert json.loads(reader.readline()) == {"ok": True}
        reply = json.loads(reader.readline())
    assert reply["id"] == 1 and reply["result"]["serverInfo"]["name"] == "imprint"


def test_daemon_refuses_a_peer_of_another_uid_fake_lookup(serve: StartDaemon) -> None:
    """With the peer-credential lookup saying another uid, the daemon closes at once and
    sends nothing, whatever the peer sends."""
    d, _ = serve(peer_uid=lambda _sock: os.getuid() + 1)
    with _client(d.path) as sock:
        with contextlib.suppress(OSError):  # it may close while we send
            sock.sendall(_hello() + INITIALIZE.encode())
        assert read_until_closed(sock) == b""


def test_daemon_refuses_a_real_second_user(
    serve: StartDaemon, other_user: OtherUser, shared_tmp: Path
) -> None:
    """A second user who reaches the socket (hard-linked out, opened 0666, as if the folder
    failed) still gets nothing: SO_PEERCRED shows its uid and the daemon closes."""
    d, _ = serve()
    exposed = shared_tmp / "exposed.sock"
    os.link(d.path, exposed)
    os.chmod(exposed, 0o666)
    attacker = textwrap.dedent(
        """
        import socket, sys
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(sys.argv[1])
        s.settimeout(20)
        data = b""
        try:
            s.sendall(sys.argv[2].encode())
            while chunk := s.recv(65536):
                data += chunk
        except OSError:
            pass
        print(repr(data))
        """
    )
    payload = _hello().decode() + INITIALIZE
    result = subprocess.run(
        other_user.command("-c", attacker, str(exposed), payload),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "b''"
    # The owner still gets served through the same socket.
    with _client(d.path) as sock, sock.makefile("rb") as reader:
        sock.sendall(_hello())
        assert json.loads(reader.readline()) == {"ok": True}


def test_bridge_refuses_a_listener_of_another_uid_fake_lookup(
    private_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where no second user can be made: a listener at our socket path that the
    peer-credential lookup reports as another uid gets refused before any byte is sent."""
    data_dir = tmp_path / "data"
    path = socket_path(data_dir)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(1)
    monkeypatch.setattr(client_mod, "peer_uid", lambda _sock: os.getuid() + 1)
    with pytest.raises(StoreError, match=rf"is served by uid {os.getuid() + 1}, not you"):
        daemon_mod.bridge_stdio(data_dir)
    conn, _ = listener.accept()
    with conn, listener:
        conn.settimeout(30)
        assert read_until_closed(conn) == b""


def test_a_connection_that_never_says_hello_does_not_block_idle_exit(serve: StartDaemon) -> None:
    """Idle exit happens with a silent connection open (hello timeout far away)."""
    d, thread = serve(idle_exit_sec=0.3, hello_timeout_sec=600)
    with _client(d.path):
        thread.join(timeout=60)
        assert not thread.is_alive(), "the daemon stayed up for a connection without a hello"


def test_a_silent_or_trickling_hello_is_cut_at_the_hello_timeout(serve: StartDaemon) -> None:
    """No hello within hello_timeout_sec: closed. Trickling a byte at a time does not extend
    it (the deadline is for the whole line, not per read)."""
    d, _ = serve(hello_timeout_sec=0.3)
    with _client(d.path) as silent:
        assert read_until_closed(silent) == b""
    closed = False
    with _client(d.path) as trickle:
        trickle.settimeout(0.05)
        for _ in range(2000):  # about 100 s of trickling at most; the cut comes after 0.3 s
            try:
                trickle.sendall(b"{")
                if trickle.recv(1) == b"":
                    closed = True
                    break
            except TimeoutError:
                continue
            except OSError:
                closed = True
                break
    assert closed, "a trickling peer kept its connection past the hello timeout"


def test_an_oversized_hello_is_refused_without_buffering_it(serve: StartDaemon) -> None:
    """More than HELLO_MAX_BYTES without a newline: the daemon stops reading and closes;
    it keeps serving others."""
    d, _ = serve(hello_timeout_sec=600)
    with _client(d.path) as big:
        with contextlib.suppress(OSError):  # closed while we were still sending: fine
            big.sendall(b"a" * (hello_mod.HELLO_MAX_BYTES + 1024))
        assert read_until_closed(big) == b""
    with _client(d.path) as ok, ok.makefile("rb") as reader:
        ok.sendall(_hello())
        assert json.loads(reader.readline()) == {"ok": True}


def test_connections_over_the_cap_get_a_one_line_error(serve: StartDaemon) -> None:
    """At max_connections open, the next one is told so (one line) and closed; closing one
    makes room again."""
    d, _ = serve(max_connections=2, hello_timeout_sec=600)
    first, second = _client(d.path), _client(d.path)
    with second, _client(d.path) as third:
        with pytest.raises(StoreError, match=r"^daemon: 2 connections are open \(the cap\)"):
            hello_mod.send_hello(third, _hello())
        first.close()
        with d._state:
            assert d._state.wait_for(lambda: d._open < 2, timeout=30)
        with _client(d.path) as fourth:
            assert hello_mod.send_hello(fourth, _hello()) is True


def test_a_refusal_written_before_the_hello_is_read_is_still_reported() -> None:
    """The daemon at its cap writes its refusal and closes before the client's hello
    arrives: sending the hello fails (broken pipe), and the refusal is still read and
    raised, not taken for a daemon that was stopping (which bridge_stdio would retry)."""
    client, daemon_end = socket.socketpair()
    with client:
        daemon_end.sendall(b'{"error": "daemon: 2 connections are open (the cap)"}\n')
        daemon_end.close()
        with pytest.raises(StoreError, match=r"^daemon: 2 connections are open \(the cap\)$"):
            hello_mod.send_hello(client, _hello())


def test_a_malformed_hello_never_reaches_the_logs(
    serve: StartDaemon, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """A password in a malformed hello is not logged (no locals, no raw bytes), in the JSON
    file or on stderr; the refusal itself is logged."""
    configure_logging(tmp_path / "data", level="info")
    try:
        d, _ = serve(hello_timeout_sec=600)
        with _client(d.path) as sock:
            sock.sendall(b'{"cwd": "/", "password": "hunter2-in-hello"\n')
            assert read_until_closed(sock) == b""
    finally:
        configure_logging(None, to_file=False)
    logged = log_path(tmp_path / "data").read_text(encoding="utf-8")
    err = capfd.readouterr().err
    assert "daemon.hello.refused" in logged
    assert "hunter2" not in logged and "hunter2" not in err


# --- the command line beside a daemon ---------------------------------------------------------

# Runs `imprint ARGS...` with subprocess.Popen refusing to start anything: before, a command
# beside a daemon spawned `python -m imprint.cli serve` to bridge to it.
ONE_PROCESS = textwrap.dedent(
    """
    import subprocess, sys

    class NoChildren(subprocess.Popen):
        def __init__(self, args, *rest, **kwargs):
            raise AssertionError(f"the command started a process: {args!r}")

    subprocess.Popen = NoChildren
    sys.argv = ["imprint", *sys.argv[1:]]
    from imprint.cli import main
    main()
    """
)


def _peer_pids(pids: list[int]) -> Callable[[socket.socket], int | None]:
    """A peer lookup for the daemon that also notes each connection's process id."""

    def lookup(conn: socket.socket) -> int | None:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        pid, uid, _gid = struct.unpack("3i", creds)
        pids.append(pid)
        return int(uid)

    return lookup


def _cli_alone(tmp_path: Path, *args: str) -> tuple[int, subprocess.CompletedProcess[str]]:
    """`imprint ARGS...` (no child processes allowed) and its process id."""
    env = {**os.environ, "IMPRINT_DATA_DIR": str(tmp_path / "data")}
    with subprocess.Popen(
        [sys.executable, "-c", ONE_PROCESS, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    ) as proc:
        out, err = proc.communicate(timeout=120)
    return proc.pid, subprocess.CompletedProcess(args, proc.returncode, out, err)


@pytest.mark.skipif(not hasattr(socket, "SO_PEERCRED"), reason="peer pids need SO_PEERCRED")
def test_a_search_beside_a_daemon_is_one_process(serve: StartDaemon, tmp_path: Path) -> None:
    """`imprint search` beside a running daemon talks to its socket itself: every connection
    the daemon accepts during the command comes from the command's own process (the kernel's
    peer credentials say which), and the command starts no process (subprocess.Popen
    refuses in it). One process, where a bridge made three."""
    pids: list[int] = []
    serve(peer_uid=_peer_pids(pids), warm_embedder=False)
    pid, found = _cli_alone(tmp_path, "search", "heron", "--mode", "lexical")
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip(), found.stderr
    assert pids and set(pids) == {pid}, (pids, pid)


@pytest.mark.skipif(not hasattr(socket, "SO_PEERCRED"), reason="peer pids need SO_PEERCRED")
def test_status_beside_a_daemon_exits_by_the_row_not_by_its_text(
    serve: StartDaemon, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`imprint status` beside a daemon prints the status tool's text and takes its exit
    code from the daemon's typed row: 1 when the indexes disagree, 0 when they agree even
    if the text holds the words "indexes: INCONSISTENT" elsewhere (here, a project's name).
    It too runs as one process."""
    from imprint.reads import status as status_mod
    from imprint.reads.status import StatusRow, format_status

    rows: list[StatusRow] = []
    monkeypatch.setattr(status_mod, "status_row", lambda *_args: rows[-1])
    base = {
        "workspace": "default",
        "records": 1,
        "vectors": 1,
        "facts": 0,
        "facts_current": 0,
        "journal_pending": 0,
        "only_in_lexical": 0,
        "fts_ok": True,
        "store": "chroma",
    }
    pids: list[int] = []
    serve(peer_uid=_peer_pids(pids), warm_embedder=False)
    for only_in_vectors, project, code in ((1, "p", 1), (0, "x indexes: INCONSISTENT", 0)):
        rows.append(
            StatusRow(
                projects={project: {"records": 1, "sources": 1}},
                only_in_vectors=only_in_vectors,
                **base,  # type: ignore[arg-type]
            )
        )
        pid, shown = _cli_alone(tmp_path, "status")
        assert shown.returncode == code, shown.stderr
        # Then the data dir's last backup (issue 30): this one has none.
        none_yet = "last backup: none yet (`imprint backup`; backup.every_hours for rolling ones)"
        assert shown.stdout == format_status(rows[-1]) + "\n" + none_yet + "\n"
        assert set(pids) == {pid}
        pids.clear()


def test_the_hello_answer_is_read_to_its_end_and_no_further() -> None:
    """The client reads the daemon's answer to its hello up to its newline only, whatever
    the daemon sent after it in the same write (the MCP session's first line is the
    bridge's to copy), and in a few reads, not one a byte."""
    from imprint.daemon.hello import send_hello

    class Counted(socket.socket):
        reads = 0

        def recv(self, *args: Any) -> bytes:
            Counted.reads += 1
            return super().recv(*args)

    pair, theirs = socket.socketpair()
    ours = Counted(fileno=pair.detach())
    with ours, theirs:
        answer = json.dumps({"ok": True, "pad": "x" * 300}).encode() + b"\n"
        theirs.sendall(answer + b'{"jsonrpc": "2.0", "id": 0}\n')
        assert send_hello(ours, b"{}\n") is True
        assert Counted.reads <= 4, Counted.reads  # before: 312, one a byte
        assert theirs.recv(100) == b"{}\n"
        ours.settimeout(5)
        assert ours.recv(100) == b'{"jsonrpc": "2.0", "id": 0}\n'
