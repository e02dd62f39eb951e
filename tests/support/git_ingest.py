"""Helpers shared by tests (moved unchanged from the test module of the same name)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def _git(tree: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()
