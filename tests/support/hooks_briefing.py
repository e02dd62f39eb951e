"""Helpers shared by tests (moved unchanged from the test module of the same name)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from imprint.config import Config
from imprint.daemon import Daemon


@pytest.fixture
def daemon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Daemon]:
    """A real daemon for the data dir (its socket under a private TMPDIR)."""
    import tempfile

    sockets = Path(tempfile.mkdtemp(prefix="imp-", dir="/tmp"))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("TMPDIR", str(sockets))
    monkeypatch.setattr(tempfile, "tempdir", None)
    d = Daemon(tmp_path / "data", Config(), idle_exit_sec=None)
    assert d.acquire()
    d.start()
    thread = threading.Thread(target=d.serve_forever, daemon=True)
    thread.start()
    try:
        yield d
    finally:
        d.shutdown()
        thread.join(timeout=30)
        d.close()
        import shutil

        shutil.rmtree(sockets, ignore_errors=True)
