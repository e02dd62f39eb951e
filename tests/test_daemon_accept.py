"""The daemon's accept loop outlives a process out of descriptors (issue 26, finding 4).

Another user's flood of half-sent requests to the dashboard made the Unix socket's accept()
fail with EMFILE, and the daemon took any OSError there for the end: it shut down, every
session with it. Such errors are now waited out; only a closed listener ends the loop.
"""

from __future__ import annotations

import errno
import socket
from pathlib import Path

import pytest

from imprint.config import Config
from imprint.daemon import Daemon

pytestmark = pytest.mark.timeout(60)


class Listener:
    """accept() fails with each of `errors` in turn, then the daemon is told to stop and the
    listener is closed (as `Daemon.shutdown` does)."""

    def __init__(self, daemon: Daemon, errors: list[int]) -> None:
        self.daemon = daemon
        self.errors = list(errors)
        self.calls = 0

    def accept(self) -> tuple[socket.socket, object]:
        self.calls += 1
        if self.errors:
            code = self.errors.pop(0)
            raise OSError(code, f"accept: {errno.errorcode[code]}")
        self.daemon.shutdown()
        raise OSError(errno.EBADF, "Bad file descriptor")

    def shutdown(self, how: int) -> None:
        pass

    def close(self) -> None:
        pass


@pytest.fixture
def daemon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Daemon:
    runtime_dir = tmp_path / "xdg"
    runtime_dir.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime_dir))
    return Daemon(tmp_path / "data", Config(), idle_exit_sec=None, warm_embedder=False)


def test_running_out_of_descriptors_in_accept_is_waited_out(daemon: Daemon) -> None:
    """EMFILE, ENFILE, ENOBUFS and ECONNABORTED from accept() are counted and retried; the
    loop ends only when the listener is closed."""
    transient = [errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ECONNABORTED]
    listener = Listener(daemon, transient)
    daemon._listener = listener  # type: ignore[assignment]
    daemon.serve_forever()
    assert listener.calls == len(transient) + 1
    assert daemon.accept_failures == len(transient)


def test_a_closed_listener_ends_the_loop_at_once(daemon: Daemon) -> None:
    """Any other accept() error (the listener closed by shutdown) ends the loop."""
    listener = Listener(daemon, [])
    daemon._listener = listener  # type: ignore[assignment]
    daemon.serve_forever()
    assert listener.calls == 1 and daemon.accept_failures == 0
