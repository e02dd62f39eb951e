"""Waiting for a process that is not the test's child (a daemon a hook started) to exit,
and what `imprint hooks status` then says."""

from __future__ import annotations

import os
import select
import subprocess
import sys
from pathlib import Path

__all__ = ["hooks_status", "wait_exit"]


def wait_exit(pid: int, seconds: float = 120) -> None:
    """Until process `pid` has exited: its pidfd turns readable then (no polling)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        # poll, not select: select() refuses a descriptor numbered 1,024 or more.
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        ready = poller.poll(int(seconds * 1000))
        assert ready, f"process {pid} still runs after {seconds} s"
    finally:
        os.close(fd)


def hooks_status(data: Path) -> str:
    """`imprint hooks status` for the data dir `data`: its stdout."""
    done = subprocess.run(
        [str(Path(sys.executable).with_name("imprint")), "hooks", "status"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "IMPRINT_DATA_DIR": str(data)},
    )
    return done.stdout + done.stderr
