"""A hostile `.gitignore` ingested through a running daemon (issue 43, medium 4), replayed.

Before: with `*a*a*a*a*a*a*a*a*a*a*a*a*b` beside a 40-character name, `imprint ingest`
through the daemon hung (50 s for one check, the interpreter lock held throughout), other
sessions' searches hung over 20 s, and `imprint stop` hung: the daemon's SIGTERM handler
could not run for minutes.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.conftest import daemon_pid, imprint_stop, owner_env
from tests.support.copied_data_dir import _call
from tests.support.hostile_ignore import _hostile_folder

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


def test_stop_kills_a_daemon_whose_walk_holds_the_interpreter_lock(tmp_path: Path) -> None:
    """A daemon whose walk holds the interpreter lock (IMPRINT_HOLD, as the hostile rule's
    backtracking did: its SIGTERM handler cannot run) is killed by `imprint stop` after the
    grace, which says so (before: stop failed after 60 s and the daemon ran on)."""
    data_dir = tmp_path / "data"
    folder = _hostile_folder(tmp_path, 40)
    held = {"IMPRINT_HOLD": "ingest.walk:600"}
    _call(data_dir, tmp_path, "status", {}, **held)
    pid = daemon_pid(data_dir)
    assert pid is not None
    log = data_dir / "logs" / "imprint.jsonl"
    with subprocess.Popen(
        [sys.executable, "-m", "imprint.cli", "ingest", str(folder)],
        env=owner_env(data_dir),
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    ) as ingest:
        try:
            deadline = time.monotonic() + 120
            while '"fault.hold"' not in (log.read_text(errors="replace") if log.exists() else ""):
                assert time.monotonic() < deadline, "the walk never reached the held point"
                assert ingest.poll() is None, "the ingest ended before the walk held"
                time.sleep(0.05)  # polling another process's log; nothing to wait on
            stopped = imprint_stop(owner_env(data_dir))
            assert stopped.returncode == 0, stopped.stderr
            assert stopped.stdout.startswith(f"killed the imprint daemon (process {pid})")
            assert "did not exit within 45 s of SIGTERM" in stopped.stdout
        finally:
            if ingest.poll() is None:
                ingest.kill()
