"""Disk and size limits: a full disk during a write is a clear error that loses nothing
acknowledged, and a nearly full one refuses writes before Chroma meets ENOSPC; the JSON log
rotates at `log.max_bytes`, keeping `log.keep` files."""

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
from imprint.actors.writer import Writer
from imprint.config import Config
from imprint.errors import StoreError
from imprint.logs import configure_logging, get_logger
from imprint.store.embedder import Embedder
from imprint.store.records import Record, WriteBatch, content_sha, make_id
from imprint.store.sqlite_write import SqliteWriter
from imprint.store.vectors import VectorIndex
from imprint.store.workspace import WorkspaceStore
from imprint.types import WorkspaceName
from imprint.writes.repair import status_row
from tests.support.tools import Session


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
            SqliteWriter,
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
            SqliteWriter,
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


# --- a nearly full disk (issue 26, finding 3) ------------------------------------------------


MIB = 1_048_576


class _CountingEmbedder:
    """The session's embedder, counting the batches the writer asks it to embed."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.batches = 0

    def embed(self, texts: list[str]) -> Any:
        self.batches += 1
        return self.inner.embed(texts)


def _note(text: str) -> Record:
    return Record(
        id=make_id("memory", "", content_sha(text)),
        content=text,
        source_type="memory",
        kind="memory",
        content_sha=content_sha(text),
    )


def test_min_free_mb_refuses_a_write_before_it_is_embedded_or_reaches_chroma(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """store.min_free_mb above what the disk has free: `store` answers one line naming the
    free space and the key, and neither the embedder nor Chroma is asked anything; the
    store keeps what it had and its indexes agree."""
    config = Config.model_validate({"store": {"min_free_mb": 1_048_576}})  # a terabyte
    rt = Runtime(tmp_path / "data", config, embedder=embedder).start()
    try:
        session = Session(rt, tmp_path)
        rt.workspace("", create=True)
        touched: list[str] = []
        for name in ("upsert", "delete"):
            monkeypatch.setattr(VectorIndex, name, lambda *_a, _n=name, **_k: touched.append(_n))
        monkeypatch.setattr(
            Embedder, "embed", lambda *_a, **_k: touched.append("embed") or pytest.fail("embed")
        )
        text = session.error("store", content="refused: the fulmar glides")
        assert text.startswith("write: only ") and " MB free on the disk holding " in text
        assert "store.min_free_mb = 1048576" in text and "nothing was stored" in text
        assert touched == []
        monkeypatch.undo()
        row = status_row(rt, "")
        assert row.records == row.vectors == 0 and row.consistent
    finally:
        rt.stop()


def test_a_chroma_failure_on_a_full_disk_reconnects_and_the_pending_batch_is_embedded_once(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chroma fails mid-write as it did on a full disk ("Failed to apply logs to the metadata
    segment"): the write is refused in one line saying the disk is full, the writer opens a
    new Chroma client (the old one hangs at its next call), and while the disk stays full
    every retry is refused before anything is embedded again. Once there is room the next
    write finishes the journaled one with its kept vectors: two batches embedded in all."""
    from chromadb.errors import InternalError

    disk = {"free": 10 * 1024 * MIB}
    counting = _CountingEmbedder(embedder)
    store = WorkspaceStore(tmp_path / "data", WorkspaceName("default"), embedder)
    try:
        writer = Writer(
            store,
            counting,
            min_free_mb=64,
            free_bytes=lambda _folder: disk["free"],  # type: ignore[arg-type]
        )
        old = store.vectors
        real_upsert = VectorIndex.upsert

        def fails_then_full(self: VectorIndex, *args: Any, **kwargs: Any) -> None:
            if self is old:
                disk["free"] = 150_000
                raise InternalError(
                    "Error in compaction: Failed to apply logs to the metadata segment"
                )
            real_upsert(self, *args, **kwargs)

        monkeypatch.setattr(VectorIndex, "upsert", fails_then_full)
        first, second = _note("first: the skua chases"), _note("second: the auk dives")
        with pytest.raises(StoreError) as failed:
            writer.write(WriteBatch(upserts=(first,)))
        text = str(failed.value)
        assert "\n" not in text and text.startswith("write: the disk is full (")
        assert store.vectors is not old and store.vectors.client is not old.client
        for _ in range(3):
            with pytest.raises(StoreError, match=r"^write: only 0\.1 MB free on the disk"):
                writer.write(WriteBatch(upserts=(second,)))
        assert counting.batches == 1
        disk["free"] = 10 * 1024 * MIB
        writer.write(WriteBatch(upserts=(second,)))
        assert counting.batches == 2
        assert store.sqlite.journal_pending() == [] and store.sqlite.quarantined() == []
        assert store.vectors.ids() == store.sqlite.ids() == {first.id, second.id}
    finally:
        store.close()


def test_a_recovery_that_cannot_set_an_entry_aside_is_one_line_over_mcp(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write fails in Chroma; the next write replays it, it fails again and must be set
    aside, and the disk is too full for that (SQLITE_FULL): both answers are one line
    (before: the second said only "Error executing tool store"); once the disk has room,
    writes work and the indexes agree."""
    config = Config.model_validate({"store": {"min_free_mb": 0}})
    rt = Runtime(tmp_path / "data", config, embedder=embedder).start()
    try:
        session = Session(rt, tmp_path)
        kept = session.ok("store", content="kept: the kittiwake").split()[1]
        monkeypatch.setattr(
            VectorIndex, "upsert", lambda *_a, **_k: (_ for _ in ()).throw(RuntimeError("boom"))
        )
        first = session.error("store", content="refused: the puffin")
        assert first.startswith("write: the store failed (boom)")
        _full_once(
            monkeypatch,
            SqliteWriter,
            "journal_quarantine",
            sqlite3.OperationalError("database or disk is full"),
        )
        second = session.error("store", content="refused too: the razorbill")
        assert second.startswith("write: an earlier write that failed twice could not be set")
        assert "the disk is full: database or disk is full" in second
        monkeypatch.undo()
        after = session.ok("store", content="after: the guillemot").split()[1]
        for rid in (kept, after):
            assert session.ok("get_memory", id=rid)
        row = status_row(rt, "")
        assert row.consistent and row.records == row.vectors
    finally:
        rt.stop()
