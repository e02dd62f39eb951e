"""Waiting for a process that is not the test's child (a daemon a hook started) to exit."""

from __future__ import annotations

import os
import select

__all__ = ["wait_exit"]


def wait_exit(pid: int, seconds: float = 120) -> None:
    """Until process `pid` has exited: its pidfd turns readable then (no polling)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        ready, _, _ = select.select([fd], [], [], seconds)
        assert ready, f"process {pid} still runs after {seconds} s"
    finally:
        os.close(fd)
