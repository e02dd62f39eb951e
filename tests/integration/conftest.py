"""Whole-stack fixtures: a data dir whose owner process (the shared daemon, or `serve --http`)
is stopped when the test ends, and the helpers that find and wait for that process."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest


def imprint_stop(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`imprint stop` in another process with this environment, its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "imprint.cli", "stop"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def owner_env(data_dir: Path) -> dict[str, str]:
    """This process's environment, pointed at `data_dir`."""
    return {
        **os.environ,
        "IMPRINT_DATA_DIR": str(data_dir),
        # A daemon a failed teardown leaves behind still goes away by itself.
        "IMPRINT_SERVER_IDLE_EXIT_SEC": "60",
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def http_server(
    data_dir: Path, cwd: Path, *extra: str
) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """`imprint serve --http` on a free port, answering; SIGTERM on the way out."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "imprint.cli", "serve", "--http", "--port", str(port), *extra],
        env=owner_env(data_dir),
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.TransportError as exc:
                if proc.poll() is not None or time.monotonic() > deadline:
                    err = proc.stderr.read().decode() if proc.stderr else ""
                    raise AssertionError(err) from exc
                time.sleep(0.1)  # polling a starting server; nothing to wait on
        yield proc, port
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)


def daemon_pid(data_dir: Path) -> int | None:
    """The pid of the process that owns the data dir, from its run file; None when none."""
    info = data_dir / "run" / "daemon.json"
    if not info.exists():
        return None
    return int(json.loads(info.read_text())["pid"])


def wait_gone(pid: int, seconds: float = 60) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)  # waiting for another process to exit; nothing to wait on
    return False


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    """A fresh data dir; an owner process a test left running is stopped (SIGTERM) after it."""
    path = tmp_path / "data"
    try:
        yield path
    finally:
        pid = daemon_pid(path)
        if pid is not None:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            else:
                assert wait_gone(pid), "the data dir's owner did not stop on SIGTERM"
