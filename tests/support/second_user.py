"""A real second Unix user for the tests that replay another local user's attack.

Where the tests run as root the fixture creates the user (and removes it after the test);
elsewhere those tests are skipped.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator

import pytest

__all__ = ["OtherUser", "can_run_as_other_user", "other_user"]


def can_run_as_other_user() -> str | None:
    if not hasattr(os, "getuid") or os.getuid() != 0:
        return "creating a second user needs root"
    if not (shutil.which("useradd") and shutil.which("userdel") and shutil.which("setpriv")):
        return "useradd, userdel or setpriv is missing"
    return None


class OtherUser:
    def __init__(self, name: str, uid: int, gid: int, python: str) -> None:
        self.name, self.uid, self.gid, self.python = name, uid, gid, python

    def command(self, *args: str) -> list[str]:
        return [
            "setpriv",
            f"--reuid={self.uid}",
            f"--regid={self.gid}",
            "--clear-groups",
            self.python,
            "-I",
            *args,
        ]


@pytest.fixture
def other_user() -> Iterator[OtherUser]:
    """A real second Unix user, created for this test and removed after it."""
    reason = can_run_as_other_user()
    if reason:
        pytest.skip(reason)
    name = f"impsq{uuid.uuid4().hex[:8]}"
    made = subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
        capture_output=True,
        text=True,
        check=False,
    )
    if made.returncode != 0:
        pytest.skip(f"useradd failed: {made.stderr.strip()}")
    try:
        ids = subprocess.run(["id", "-u", name], capture_output=True, text=True, check=True)
        gids = subprocess.run(["id", "-g", name], capture_output=True, text=True, check=True)
        uid, gid = int(ids.stdout), int(gids.stdout)
        # The attacker's interpreter must be one that user can open (not under /root).
        for python in ("/usr/bin/python3", "/usr/local/bin/python3", sys.executable):
            probe = subprocess.run(
                OtherUser(name, uid, gid, python).command("-c", "pass"),
                capture_output=True,
                check=False,
            )
            if probe.returncode == 0:
                break
        else:
            pytest.skip("no Python interpreter the second user may run")
        yield OtherUser(name, uid, gid, python)
    finally:
        subprocess.run(["userdel", name], capture_output=True, check=False)
