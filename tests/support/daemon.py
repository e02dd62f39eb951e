"""Helpers shared by tests (moved unchanged from the test module of the same name)."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from imprint.config import Config
from imprint.daemon import Daemon


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A short world-writable sticky folder (like /tmp) used as TMPDIR: both users meet here."""
    folder = Path(tempfile.mkdtemp(prefix="imp-", dir="/tmp"))
    os.chmod(folder, 0o1777)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def private_env(shared_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Sockets go under shared_tmp for this test (no XDG_RUNTIME_DIR): never the real /tmp."""
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("TMPDIR", str(shared_tmp))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    return shared_tmp


StartDaemon = Callable[..., tuple[Daemon, threading.Thread]]


@pytest.fixture
def serve(private_env: Path, tmp_path: Path) -> Iterator[StartDaemon]:
    """Start a real Daemon (runtime, socket, accept loop) with the given knobs; stop it after."""
    started: list[tuple[Daemon, threading.Thread]] = []

    def start(**kwargs: object) -> tuple[Daemon, threading.Thread]:
        kwargs.setdefault("idle_exit_sec", None)
        d = Daemon(tmp_path / "data", Config(), **kwargs)  # type: ignore[arg-type]
        assert d.acquire()
        d.start()
        thread = threading.Thread(target=d.serve_forever, daemon=True)
        thread.start()
        started.append((d, thread))
        return d, thread

    try:
        yield start
    finally:
        for d, thread in started:
            d.shutdown()
            thread.join(timeout=30)
            d.close()
