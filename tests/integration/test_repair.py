"""Damage to either index is found by the deep check, reads keep answering from the healthy
side, and repair makes the indexes agree again (real Chroma, real SQLite)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from imprint.actors.lifecycle import Runtime
from imprint.actors.write_messages import Write
from imprint.config import Config
from imprint.store import integrity
from imprint.store.check import RepairReport
from imprint.store.embedder import Embedder
from imprint.store.records import Record, WriteBatch, content_sha, make_id
from imprint.store.vectors import VectorIndex, open_client
from imprint.types import WorkspaceName
from imprint.writes.repair import repair_workspace, status_row
from tests.support.tools import Session

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

BIRDS = ["auk", "bittern", "curlew", "dunlin", "eider", "fulmar", "godwit", "hobby"]


class Store:
    """A data dir opened and closed around damage done from outside."""

    def __init__(self, root: Path, embedder: Embedder) -> None:
        self.root = root
        self.data = root / "data"
        self.embedder = embedder
        self.runtime: Runtime | None = None
        self.ids: dict[str, str] = {}

    def open(self) -> Session:
        self.runtime = Runtime(self.data, Config(), embedder=self.embedder).start()
        return Session(self.runtime, self.root)

    def close(self) -> None:
        if self.runtime is not None:
            self.runtime.stop()
            self.runtime = None

    def check(self) -> Any:
        assert self.runtime is not None
        return status_row(self.runtime, "", check=True)

    def repair(self) -> RepairReport:
        assert self.runtime is not None
        return repair_workspace(self.runtime, "")

    def folder(self) -> Path:
        return self.data / "workspaces" / "default"

    @contextmanager
    def vectors(self) -> Iterator[VectorIndex]:
        """The closed store's collection, for damage done from outside; closed after, as
        an open client of the folder would keep Chroma's files (and its cache) held."""
        client = open_client(self.folder() / "chroma", "")
        vectors = VectorIndex(client, WorkspaceName("default"), self.embedder)
        try:
            yield vectors
        finally:
            vectors.close()

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        """`imprint ARGS` in a new process on this data dir."""
        return subprocess.run(
            [sys.executable, "-m", "imprint.cli", *args],
            env={**os.environ, "IMPRINT_DATA_DIR": str(self.data)},
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

    def sql(self, statement: str, *args: Any) -> None:
        conn = sqlite3.connect(self.folder() / "imprint.sqlite3")
        try:
            conn.execute(statement, args)
            conn.commit()
        finally:
            conn.close()


@pytest.fixture
def store(tmp_path: Path, embedder: Embedder) -> Iterator[Store]:
    s = Store(tmp_path, embedder)
    session = s.open()
    for bird in BIRDS:
        text = f"the {bird} was counted on the estuary at dawn"
        s.ids[bird] = session.ok("store", content=text).split()[1]
    s.close()
    try:
        yield s
    finally:
        s.close()


def test_deleted_vectors_are_found_searched_lexically_and_reembedded(store: Store) -> None:
    """Vectors deleted from Chroma: --check names them, hybrid search still finds the
    records (lexical side), repair re-embeds them and semantic search finds them again."""
    with store.vectors() as vectors:
        vectors.delete([store.ids["auk"], store.ids["curlew"]])
    session = store.open()
    row = store.check()
    assert not row.consistent
    assert row.findings == [
        f"2 records have no vector: {', '.join(sorted([store.ids['auk'], store.ids['curlew']]))}"
    ]
    assert store.ids["auk"] in session.ok("search", query="auk")
    assert store.ids["auk"] not in session.ok("search", query="auk", mode="semantic", limit=8)
    result = store.repair()
    assert result.done == [
        "re-embedded 2 records into the vector index (2 missing, 0 stale, 0 without a content hash)"
    ]
    assert result.left == [] and store.check().consistent
    assert store.ids["auk"] in session.ok("search", query="auk", mode="semantic", limit=8)


def test_deleted_rows_are_found_and_their_orphan_vectors_removed(store: Store) -> None:
    """Rows deleted from SQLite: --check names the vectors without a record; reads keep
    working (search skips them); repair removes them and names what to ingest again (Chroma
    keeps no text to restore the rows from)."""
    gone = sorted([store.ids["eider"], store.ids["fulmar"], store.ids["godwit"]])
    store.sql(f"DELETE FROM records WHERE id IN ({','.join('?' * len(gone))})", *gone)
    session = store.open()
    row = store.check()
    assert row.findings == [f"3 vectors have no record: {', '.join(gone)}"]
    found = session.ok("search", query="eider estuary", limit=20)
    assert "the eider" not in found
    assert found.startswith("warning: 3 results had no record (the indexes disagree); run ")
    assert store.ids["hobby"] in session.ok("search", query="hobby")
    result = store.repair()
    assert result.done == [
        "removed 3 vectors whose records are gone from SQLite (Chroma keeps no text to "
        "restore them from); 3 stored memories cannot come back"
    ]
    assert result.left == [] and store.check().consistent


@pytest.mark.parametrize("page", [5000, 3])
def test_a_vector_of_another_text_is_found_by_its_content_hash(
    store: Store, page: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A vector whose metadata hash is not its record's (a stale write): found, re-embedded;
    also when the vectors' hashes are read by id in pages of 3 (8 records: 3 pages)."""
    monkeypatch.setattr(integrity, "HASH_PAGE", page)
    rid = store.ids["dunlin"]
    with store.vectors() as vectors:
        got = vectors.collection.get(ids=[rid], include=["metadatas", "embeddings"])
        meta = {**got["metadatas"][0], "content_sha": content_sha("another text")}
        vectors.collection.upsert(ids=[rid], embeddings=got["embeddings"], metadatas=[meta])
    store.open()
    assert store.check().findings == [f"1 vectors belong to another text than their record: {rid}"]
    result = store.repair()
    assert result.done[0].startswith("re-embedded 1 records into the vector index (0 missing, 1")
    assert store.check().consistent


def test_a_damaged_fulltext_index_is_rebuilt(store: Store) -> None:
    """An FTS5 entry removed behind the records table's back: lexical search misses the
    record, --check says the full-text index is damaged, repair rebuilds it."""
    store.sql(
        "INSERT INTO records_fts(records_fts, rowid, content) "
        "SELECT 'delete', rowid, content FROM records WHERE id = ?",
        store.ids["bittern"],
    )
    session = store.open()
    assert session.ok("search", query="bittern", mode="lexical").endswith("no results")
    assert store.runtime is not None
    # The plain status sees it too (before: it counted FTS rows through the records table).
    assert not status_row(store.runtime, "").fts_ok
    assert store.check().findings == ["the full-text index (FTS5) is damaged"]
    assert store.repair().done == ["rebuilt the full-text index (FTS5) from the records table"]
    assert store.check().consistent
    assert store.ids["bittern"] in session.ok("search", query="bittern", mode="lexical")


def test_an_unreadable_vector_index_degrades_search_and_is_rebuilt(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chroma failing every search (its vector segment unreadable): hybrid search answers
    from the lexical side under a one-line warning, --check reports it, repair rebuilds
    the collection from SQLite, and search is whole again. The failure is injected into the
    opened Chroma collection only (Chroma's own object): the rebuilt one is real and
    unpatched."""
    session = store.open()
    assert store.runtime is not None
    damaged = store.runtime.workspace("default").vectors.collection

    def query(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("Error loading hnsw index")

    monkeypatch.setattr(damaged, "query", query)
    found = session.ok("search", query="godwit")
    first, second = found.splitlines()[:2]
    assert first.startswith("warning: the vector index failed (RuntimeError: Error loading hnsw")
    assert first.endswith("run `imprint status --check`, then `imprint repair`")
    assert second.startswith('search "godwit" (hybrid):') and store.ids["godwit"] in found
    assert store.check().findings == [
        "vector index unreadable: RuntimeError: Error loading hnsw index"
    ]
    result = store.repair()
    assert result.done == [
        f"rebuilt the vector index from the lexical one: {len(BIRDS)} records re-embedded"
    ]
    assert result.left == [] and store.check().consistent
    again = session.ok("search", query="godwit")
    assert not again.startswith("warning") and store.ids["godwit"] in again
    assert store.ids["godwit"] in session.ok("search", query="godwit", mode="semantic", limit=8)


def test_truncated_segment_files_are_found_after_a_restart_and_rebuilt(
    tmp_path: Path, embedder: Embedder
) -> None:
    """Chroma's persisted HNSW files (written once 1,000+ vectors are in) truncated to zero
    while the store is closed: Chroma cannot rebuild them (its log is purged once they are
    written) and every read of the collection fails. A new process's `status --check`
    exits 1 naming the unreadable index; the store reopened here reads the damaged files
    too, as closing released Chroma's copy of the segment (a client never closed kept it,
    and the damage went unseen until a restart); repair rebuilds the vectors from SQLite,
    no record is lost, and semantic search answers again."""
    s = Store(tmp_path, embedder)
    s.open()
    assert s.runtime is not None
    s.runtime.workspace("default")
    texts = [f"survey note {i}: a flock of {BIRDS[i % 8]}s" for i in range(1200)]
    records = tuple(
        Record(id=make_id("t", t), content=t, source_type="memory", content_sha=content_sha(t))
        for t in texts
    )
    vectors = np.random.default_rng(13).standard_normal((len(texts), 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    write = s.runtime.writer("default").write(Write(batch=WriteBatch(upserts=records)), vectors)
    write.get(timeout=300)
    s.close()
    segments = list((s.folder() / "chroma").rglob("*.bin"))
    assert segments and sum(p.stat().st_size for p in segments) > 1_000_000
    for path in segments:
        os.truncate(path, 0)
    restarted = s.cli("status", "--check")
    assert restarted.returncode == 1, restarted.stderr[-2000:]
    assert "  check: vector index unreadable: " in restarted.stdout
    assert "Error loading hnsw index" in restarted.stdout
    session = s.open()
    try:
        row = s.check()
        assert not row.consistent and row.records == 1200
        assert row.findings is not None and len(row.findings) == 1
        assert row.findings[0].startswith("vector index unreadable: ")
        assert "Error loading hnsw index" in row.findings[0]
        meanwhile = session.ok("search", query="flock of auks")
        assert meanwhile.startswith("warning: the vector index failed")
        assert 'search "flock of auks" (hybrid): 10 results' in meanwhile
        result = s.repair()
        assert result.done == [
            "rebuilt the vector index from the lexical one: 1200 records re-embedded"
        ]
        assert result.left == []
        row = s.check()
        assert row.consistent and row.records == 1200 and row.vectors == 1200
        answer = session.ok("search", query="flock of auks", mode="semantic")
        assert answer.startswith('search "flock of auks" (semantic): 10 results')
    finally:
        s.close()


def test_cli_status_check_and_repair(store: Store) -> None:
    """`imprint status --check` exits 1 naming the damage; `imprint repair` says what it
    found and did; then `status --check` exits 0."""
    with store.vectors() as vectors:
        vectors.delete([store.ids["hobby"]])
    damaged = store.cli("status", "--check")
    assert damaged.returncode == 1
    assert f"  check: 1 records have no vector: {store.ids['hobby']}" in damaged.stdout
    repaired = store.cli("repair")
    assert repaired.returncode == 0, repaired.stderr
    assert repaired.stdout.splitlines() == [
        f"found: 1 records have no vector: {store.ids['hobby']}",
        "done: re-embedded 1 records into the vector index "
        "(1 missing, 0 stale, 0 without a content hash)",
    ]
    healthy = store.cli("status", "--check")
    assert healthy.returncode == 0, healthy.stdout
    assert "check: every record agrees in both indexes (ids, content hashes)" in healthy.stdout


def test_cli_status_exits_1_when_the_indexes_disagree(store: Store) -> None:
    """`imprint status` (no --check) on disagreeing indexes prints INCONSISTENT and exits 1
    (before the fix: click's return code was dropped and it exited 0)."""
    with store.vectors() as vectors:
        vectors.delete([store.ids["auk"]])
    plain = store.cli("status")
    assert "indexes: INCONSISTENT" in plain.stdout
    assert plain.returncode == 1
