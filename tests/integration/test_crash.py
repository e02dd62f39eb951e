"""A process killed with SIGKILL mid-ingest loses nothing acknowledged, and the indexes agree."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from imprint.actors.lifecycle import Runtime
from imprint.config import Config
from imprint.store.embedder import Embedder
from imprint.store.vectors import VectorIndex, open_client
from imprint.types import WorkspaceName
from imprint.writes.repair import status_row
from tests.conftest import write_tree

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def _tree(root: Path, files: int) -> Path:
    return write_tree(
        root,
        {
            f"notes/note{i:02d}.md": f"# Note {i}\n\nTopic number {i}: "
            + " ".join(f"word{i}x{j}" for j in range(60))
            for i in range(files)
        },
    )


def _ingest(data_dir: Path, tree: Path, **env: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "imprint.cli", "ingest", str(tree), "--project", "crash"],
        env={**os.environ, "IMPRINT_DATA_DIR": str(data_dir), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _raw_ids(data_dir: Path, embedder: Embedder) -> tuple[set[str], set[str], int]:
    """Chroma ids, FTS ids and pending journal entries, read without running recovery."""
    folder = data_dir / "workspaces" / "default"
    vectors = VectorIndex(open_client(folder / "chroma", ""), WorkspaceName("default"), embedder)
    try:
        vector_ids = vectors.ids()
    finally:
        vectors.close()  # an open client of the folder would keep its files, and its cache
    conn = sqlite3.connect(folder / "imprint.sqlite3")
    try:
        fts = {
            row[0]
            for row in conn.execute(
                "SELECT r.id FROM records_fts JOIN records r ON r.rowid = records_fts.rowid"
            )
        }
        pending = conn.execute("SELECT COUNT(*) FROM journal").fetchone()[0]
    finally:
        conn.close()
    return vector_ids, fts, pending


def _recovered(data_dir: Path, embedder: Embedder) -> tuple[set[str], set[str], bool]:
    rt = Runtime(data_dir, Config(), embedder=embedder).start()
    try:
        store = rt.workspace("")
        reader = store.reader()
        try:
            lexical = reader.ids()
        finally:
            reader.close()
        return store.vectors.ids(), lexical, status_row(rt).consistent
    finally:
        rt.stop()


def test_kill_between_chroma_and_sqlite_is_finished_on_restart(
    tmp_path: Path, embedder: Embedder
) -> None:
    """SIGKILL after Chroma took a write but before SQLite did: restart finishes the write."""
    data_dir = tmp_path / "data"
    tree = _tree(tmp_path / "tree", 6)
    proc = _ingest(data_dir, tree, IMPRINT_FAILPOINT="writer.after_vectors:3")
    proc.communicate(timeout=300)
    assert proc.returncode == -signal.SIGKILL

    vectors, fts, pending = _raw_ids(data_dir, embedder)
    assert pending == 1
    assert fts < vectors  # the interrupted write reached Chroma only

    vectors, lexical, consistent = _recovered(data_dir, embedder)
    assert vectors == lexical and consistent
    assert len(vectors) == 3  # the two acknowledged files and the finished one

    rerun = _ingest(data_dir, tree)
    out, errs = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, errs.decode()
    assert "3 unchanged" in out.decode()
    vectors, lexical, consistent = _recovered(data_dir, embedder)
    assert len(vectors) == 6 and vectors == lexical and consistent


def test_sigkill_at_an_arbitrary_moment_leaves_equal_indexes(
    tmp_path: Path, embedder: Embedder
) -> None:
    """SIGKILL from outside, while writes stream in: after restart Chroma ids == FTS5 ids."""
    data_dir = tmp_path / "data"
    tree = _tree(tmp_path / "tree", 40)
    proc = _ingest(data_dir, tree)
    db = data_dir / "workspaces" / "default" / "imprint.sqlite3"
    acknowledged = 0
    deadline = time.monotonic() + 240
    while acknowledged < 5 and time.monotonic() < deadline and proc.poll() is None:
        if db.exists():
            try:
                conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
                acknowledged = conn.execute("SELECT COUNT(*) FROM sources").fetchone()[0]
                conn.close()
            except sqlite3.OperationalError:
                pass
        time.sleep(0.05)  # polling another process's database: nothing to wait on
    assert proc.poll() is None, "ingest ended before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert acknowledged >= 5

    vectors, lexical, consistent = _recovered(data_dir, embedder)
    assert vectors == lexical and consistent
    assert len(lexical) >= acknowledged  # nothing acknowledged was lost
