"""Whole-stack fixtures: a data dir whose owner process (the shared daemon, or `serve --http`)
is stopped when the test ends, and the helpers that find and wait for that process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

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
