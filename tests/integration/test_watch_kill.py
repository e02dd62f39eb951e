"""A daemon SIGKILLed in the middle of a 2,000-file watch batch (issue 31, faults): once it
is started again, its rescan brings the index back to the files: `status --check` clean, no
file missing, none stale."""

from __future__ import annotations

import json
import os
import select
import sqlite3
from pathlib import Path

import pytest

from imprint.daemon import stop_daemon
from imprint.store.records import content_sha
from tests.support.archive import cli

FILES = 2000


def _cli(data: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = cli(data, *args, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _wait_gone(pid: int, timeout: float) -> bool:
    """Wait for a process that is not our child to end (a pidfd turns readable)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)


@pytest.mark.slow
def test_sigkill_during_a_watch_batch_then_restart_matches_the_files(tmp_path: Path) -> None:
    """The daemon is killed (SIGKILL, at its third write) while it indexes a burst of 2,000
    new files; the next daemon watches the folder again, and after its rescan every file is
    indexed at its current text, the indexes agree record by record, and nothing extra is
    left."""
    data, tree = tmp_path / "data", tmp_path / "tree"
    tree.mkdir()
    (tree / "seed.md").write_text("# Seed\n\nfirst file\n")
    killing = {"IMPRINT_FAILPOINT": "writer.after_vectors:3"}
    assert _cli(data, "watch", str(tree), env=killing).startswith(f"watch {tree.resolve()} ")
    pid = json.loads((data / "run" / "daemon.json").read_text())["pid"]
    try:
        for i in range(FILES):
            (tree / f"f{i:04}.md").write_text(f"# File {i}\n\nburst file number {i}\n")
        assert _wait_gone(pid, 300), "the failpoint did not kill the daemon"
        # Started again (no failpoint): it watches the persisted folder, from a rescan.
        deadline_lines = ""
        for _ in range(600):
            deadline_lines = _cli(data, "watch", "--list")
            if "watching;" in deadline_lines and " 0 changed files" in deadline_lines:
                break
        else:
            pytest.fail(deadline_lines)
        shown = _cli(data, "status")  # the daemon's status names the folder too
        assert f"  watch {tree.resolve()} (project tree): watching; 0 changed files" in shown
        assert ": stopped; 0 changed files" in _cli(data, "watch", "--stop", str(tree))
        assert _cli(data, "watch", "--list") == "no folder is watched\n"
    finally:
        stop_daemon(data)
    status = cli(data, "status", "--check")
    assert status.returncode == 0, status.stdout + status.stderr
    assert "indexes: consistent" in status.stdout
    assert "every record agrees in both indexes" in status.stdout
    (db_file,) = data.rglob("imprint.sqlite3")
    with sqlite3.connect(f"file:{db_file}?mode=ro", uri=True) as db:
        shas = dict(db.execute("SELECT source, sha FROM sources"))
        counts = dict(db.execute("SELECT source, count(*) FROM records GROUP BY source"))
        chunk_counts = dict(db.execute("SELECT source, chunk_count FROM sources"))
    files = {p.name: content_sha(p.read_text()) for p in tree.iterdir() if p.suffix == ".md"}
    assert len(files) == FILES + 1
    assert shas == files  # nothing missing, nothing stale, nothing extra
    assert counts == chunk_counts
