"""`imprint ingest PATH` through a running daemon reads under exactly the roots it reads
under in-process (issue 43, finding 2).

Before, the daemon's session added the caller's working directory to the roots (the default
when ingest.allowed_roots is empty), so a repository's `docs/setup.md ->
../../../.ssh/id_ed25519` put the private key into the index when run from `~`, while the
same command without a daemon counted "2 outside the allowed roots".
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from imprint.daemon import daemon_alive
from tests.integration.conftest import daemon_pid, imprint_stop, owner_env
from tests.support.copied_data_dir import _call

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

MARKER = "sandpiper-" + "keymaterial"  # stands in for the key's text


def _home(tmp_path: Path) -> Path:
    """A home folder with a private file, a neighbour's notes, and a git repository whose
    two links lead out of it (into the home folder, not out of it)."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text(f"# key\n\n{MARKER} private text\n")
    (home / "other").mkdir()
    (home / "other" / "notes.md").write_text("# other\n\nthe plover's private notes\n")
    repo = home / "src" / "repo"
    (repo / "docs").mkdir(parents=True)
    (repo / "docs" / "guide.md").write_text("# guide\n\nthe turnstone turns stones\n")
    (repo / "docs" / "setup.md").symlink_to("../../../.ssh/id_ed25519")
    (repo / "notes.md").symlink_to("../../other/notes.md")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "init"], check=True)
    return home


def _ingest(data_dir: Path, home: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "imprint.cli", "ingest", "src/repo"],
        env=owner_env(data_dir),
        cwd=home,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    # The same words; only the timing may differ.
    return re.sub(r"; [0-9.]+ s, [0-9.]+ chunks/s$", "", done.stdout.strip())


def test_cli_ingest_through_a_daemon_reads_under_the_in_process_roots(tmp_path: Path) -> None:
    """From the home folder, `imprint ingest src/repo` with a daemon running says exactly
    what it says without one (1 file, 2 outside the allowed roots), and neither the
    private file nor the neighbour's notes are in the daemon's index."""
    home = _home(tmp_path)
    alone, served = tmp_path / "alone", tmp_path / "served"
    in_process = _ingest(alone, home)
    assert not daemon_alive(alone)
    assert "ingested 1 files" in in_process and "2 outside the allowed roots" in in_process
    _call(served, home, "status", {})  # the daemon of `served` runs from here on
    pid = daemon_pid(served)
    try:
        assert pid is not None and daemon_alive(served)
        assert _ingest(served, home) == in_process.replace(str(alone), str(served))
        assert daemon_pid(served) == pid  # it went through that daemon
        for word in (MARKER, "plover"):
            found = _call(served, home, "search", {"query": word, "mode": "lexical"})
            assert "private" not in found, found
        assert "turnstone" in _call(served, home, "search", {"query": "turnstone"})
    finally:
        imprint_stop(owner_env(served))
    assert os.path.exists(home / ".ssh" / "id_ed25519")  # nothing was touched there
