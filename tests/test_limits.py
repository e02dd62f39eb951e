"""Disk and size limits: a full disk during a write is a clear error that loses nothing
acknowledged; the JSON log rotates at `log.max_bytes`, keeping `log.keep` files."""

from __future__ import annotations

import errno
import inspect
import json
import logging
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from imprint.actors.lifecycle import Runtime
from imprint.config import Config
from imprint.logs import configure_logging, get_logger
from imprint.reads.status import status_row
from imprint.store.embedder import Embedder
from imprint.store.sqlite import SqliteStore
from imprint.store.vectors import VectorIndex
from tests.test_tools import Session


@pytest.fixture
def runtime(tmp_path: Path, embedder: Embedder) -> Iterator[Runtime]:
    rt = Runtime(tmp_path / "data", Config(), embedder=embedder).start()
    try:
        yield rt
    finally:
        rt.stop()


def _full_once(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, exc: Exception) -> None:
    """`owner.name` fails once with `exc` (the disk is full), then works again (space freed)."""
    real = getattr(owner, name)
    state = {"failed": False}

    def failing(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not state["failed"]:
            state["failed"] = True
            raise exc
        return real(self, *args, **kwargs)

    monkeypatch.setattr(owner, name, failing)


@pytest.mark.parametrize(
    ("owner", "name", "exc", "said"),
    [
        (
            SqliteStore,
            "journal_begin",
            sqlite3.OperationalError("database or disk is full"),
            "nothing was stored",
        ),
        (
            VectorIndex,
            "upsert",
            OSError(errno.ENOSPC, "No space left on device"),
            "this write was not acknowledged",
        ),
        (
            SqliteStore,
            "apply",
            sqlite3.OperationalError("database or disk is full"),
            "this write was not acknowledged",
        ),
    ],
)
def test_a_full_disk_during_a_write_is_a_clear_error_and_loses_nothing(
    runtime: Runtime,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    owner: Any,
    name: str,
    exc: Exception,
    said: str,
) -> None:
    """The disk fills at each step of a write (journal, Chroma, SQLite): the client gets one
    line saying the disk is full (before the fix: "Error executing tool store"); every
    acknowledged memory is still there; after space is freed the next write works, and the
    refused one is wholly there or wholly absent, the indexes agreeing."""
    session = Session(runtime, tmp_path)
    kept = [session.ok("store", content=f"kept {i}: the petrel").split()[1] for i in range(3)]
    _full_once(monkeypatch, owner, name, exc)
    text = session.error("store", content="refused: the storm petrel")
    assert text.startswith("write: the disk is full (")
    assert said in text
    after = session.ok("store", content="after: the shag").split()[1]
    for rid in [*kept, after]:
        assert session.ok("get_memory", id=rid)
    row = status_row(runtime, "")
    assert row.consistent and row.records == row.vectors
    found = session.ok("search", query="storm petrel refused", mode="lexical")
    assert row.records in (4, 5) and ("refused: the storm petrel" in found) == (row.records == 5)


_ROTATION = "max_bytes" in inspect.signature(configure_logging).parameters


@pytest.mark.skipif(
    not _ROTATION, reason="configure_logging(max_bytes=, keep=) lands with the dashboard branch"
)
def test_the_json_log_rotates_at_max_bytes_keeping_n_files(tmp_path: Path) -> None:
    """log.max_bytes = 64 KiB, log.keep = 2: about 400 KiB of events leave imprint.jsonl and
    two rotated files, none over the limit by more than one line, all private, all JSON."""
    config = Config()
    assert config.log.max_bytes == 20 * 1_048_576 and config.log.keep == 3  # the defaults
    kwargs: dict[str, Any] = {"max_bytes": 65_536, "keep": 2}
    path = configure_logging(tmp_path, **kwargs)
    assert path is not None
    log = get_logger("imprint.test")
    try:
        for i in range(2000):
            log.warning("test.event", n=i, filler="x" * 150)
    finally:
        for handler in logging.getLogger().handlers:
            handler.flush()
    files = sorted(p.name for p in path.parent.iterdir())
    assert files == ["imprint.jsonl", "imprint.jsonl.1", "imprint.jsonl.2"]
    for name in files:
        file = path.parent / name
        assert file.stat().st_size <= 65_536 + 1024
        assert stat.S_IMODE(file.stat().st_mode) == 0o600
        lines = file.read_text().splitlines()
        assert lines and all(json.loads(line)["event"] == "test.event" for line in lines)
    newest = json.loads(path.read_text().splitlines()[-1])
    assert newest["n"] == 1999
