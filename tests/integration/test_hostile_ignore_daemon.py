"""A hostile `.gitignore` ingested through a running daemon (issue 43, medium 4), replayed.

Before: with `*a*a*a*a*a*a*a*a*a*a*a*a*b` beside a 40-character name, `imprint ingest`
through the daemon hung (50 s for one check, the interpreter lock held throughout), other
sessions' searches hung over 20 s, and `imprint stop` hung: the daemon's SIGTERM handler
could not run for minutes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import daemon_pid, imprint_stop, owner_env
from tests.integration.test_copied_data_dir import _call
from tests.test_hostile_ignore import _hostile_folder

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def test_a_hostile_ignore_file_holds_up_nothing_in_the_daemon(tmp_path: Path) -> None:
    """`imprint ingest` of a folder (not a git work tree) with the hostile rule beside a
    40-character name, through a running daemon, ingests the two files the rule leaves;
    another session's search finds them; `imprint stop` stops the daemon on SIGTERM (no
    SIGKILL needed)."""
    data_dir = tmp_path / "data"
    folder = _hostile_folder(tmp_path, 40)
    _call(data_dir, tmp_path, "status", {})
    pid = daemon_pid(data_dir)
    assert pid is not None
    try:
        done = subprocess.run(
            [sys.executable, "-m", "imprint.cli", "ingest", str(folder)],
            env=owner_env(data_dir),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("ingested 2 files"), done.stdout
        found = _call(data_dir, tmp_path, "search", {"query": "dunlin", "mode": "lexical"})
        assert "dunlin probes" in found
        assert daemon_pid(data_dir) == pid  # all of it through that one daemon
    finally:
        stopped = imprint_stop(owner_env(data_dir))
    assert stopped.stdout.startswith(f"stopped the imprint daemon (process {pid})"), stopped
