"""Helpers shared by tests (moved unchanged from the test module of the same name)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def cli(
    data: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "imprint.cli", *args],
        env={**os.environ, "IMPRINT_DATA_DIR": str(data), **(env or {})},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def start_daemon(data: Path, env: dict[str, str] | None = None) -> None:
    """Start a daemon owning `data` as `imprint serve` starts it (by a short-lived process
    of its own, which returns once the daemon answers), with `env` added to its environment."""
    started = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, pathlib; from imprint.daemon import connect; "
            "connect(pathlib.Path(sys.argv[1])).close()",
            str(data),
        ],
        env={**os.environ, "IMPRINT_DATA_DIR": str(data), **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert started.returncode == 0, started.stderr
