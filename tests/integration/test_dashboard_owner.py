"""`imprint dashboard` asks the process that owns the data dir to serve the page: the shared
daemon (started if none runs) or `serve --http`. Real subprocesses, loopback only."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.integration.conftest import daemon_pid

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _env(data_dir: Path) -> dict[str, str]:
    return {**os.environ, "IMPRINT_DATA_DIR": str(data_dir), "IMPRINT_SERVER_IDLE_EXIT_SEC": "60"}


def _sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _dashboard(data_dir: Path, cwd: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "imprint.cli", "dashboard", "--port", "0"],
        env=_env(data_dir),
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl-C as a terminal sends it: a test run started in the background (`cmd &` in a
        # script) inherits SIGINT ignored, and Python then installs no KeyboardInterrupt.
        preexec_fn=_sigint_default,
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()  # blocks until the owner answered
    if not url:
        proc.kill()
        _, err = proc.communicate(timeout=30)
        raise AssertionError(err)
    return proc, url


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)


def _overview(url: str) -> str:
    with httpx.Client(follow_redirects=True, timeout=60) as client:
        r = client.get(url)
        assert r.status_code == 200, r.text
        return r.text


def test_dashboard_is_served_by_the_daemon_it_starts(data_dir: Path, tmp_path: Path) -> None:
    """With no owner running, `imprint dashboard` starts the shared daemon, which serves the
    page; a second `imprint dashboard` gets its own token for the same server; when both
    exit, the daemon stops serving it."""
    first, url = _dashboard(data_dir, tmp_path)
    try:
        assert url.startswith("http://127.0.0.1:") and "?token=" in url
        pid = daemon_pid(data_dir)
        assert pid is not None and pid != first.pid
        assert f"daemon (pid {pid})" in _overview(url)
        with httpx.Client() as stranger:  # someone who read the URL after the owner used it
            assert stranger.get(url).status_code == 401
            assert stranger.get(url.split("?")[0]).status_code == 401
        second, url2 = _dashboard(data_dir, tmp_path)
        try:
            assert url2.split("?")[0] == url.split("?")[0] and url2 != url
            assert f"daemon (pid {pid})" in _overview(url2)
        finally:
            _stop(second)
        assert f"daemon (pid {pid})" in _overview(_dashboard_url_again(data_dir, tmp_path))
    finally:
        _stop(first)
    port = int(url.split(":")[2].split("/")[0])
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(f"http://127.0.0.1:{port}/", timeout=1)
        except httpx.TransportError:
            break
        assert time.monotonic() < deadline, "the dashboard outlived its last `imprint dashboard`"
        time.sleep(0.05)  # waiting for another process to close a port; nothing to wait on


def _dashboard_url_again(data_dir: Path, cwd: Path) -> str:
    proc, url = _dashboard(data_dir, cwd)
    _stop(proc)
    # The first `imprint dashboard` still holds it open: the new token still works.
    return url


def test_dashboard_is_served_by_serve_http(data_dir: Path, tmp_path: Path) -> None:
    """With `serve --http` owning the data dir, it serves the dashboard too."""
    from imprint.daemon import socket_path

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "imprint.cli", "serve", "--http", "--port", str(port)],
        env=_env(data_dir),
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 90
        while not socket_path(data_dir).exists():
            assert server.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)  # waiting for another process to start; nothing to wait on
        proc, url = _dashboard(data_dir, tmp_path)
        try:
            assert f"serve --http (pid {server.pid})" in _overview(url)
        finally:
            _stop(proc)
    finally:
        server.send_signal(signal.SIGTERM)
        server.communicate(timeout=60)
