"""The store through the actors, on the embedded Chroma and on a real `chroma run` server."""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

import numpy as np
import pytest
import structlog

from imprint.actors.lifecycle import Runtime
from imprint.actors.write_messages import Write
from imprint.config import Config
from imprint.errors import InputError, StoreBusyError, WorkspaceError
from imprint.logs import configure_logging
from imprint.reads.gateway import ActorReads
from imprint.reads.search import SearchArgs, checked_mode, search, search_text
from imprint.store.embedder import Embedder
from imprint.store.records import Filters, Record, WriteBatch, make_id
from imprint.store.sqlite_read import SqliteReader
from imprint.store.sqlite_write import SqliteWriter
from imprint.store.vectors import VectorIndex, open_client
from imprint.store.workspace import WorkspaceStore
from imprint.types import WorkspaceName
from imprint.writes.files import ingest_path
from imprint.writes.repair import status_row
from tests.conftest import drop_one_fts_entry
from tests.support.trace_support import in_flight_at_once, reader_messages, stall


def _sources(rows: object) -> list[str]:
    return [h.record.source for h in rows.hits]  # type: ignore[attr-defined]


def test_ingest_then_each_mode_finds_an_exact_phrase(runtime: Runtime, small_tree: Path) -> None:
    """Lexical, semantic and hybrid search each rank the one file holding a phrase first."""
    report = ingest_path(runtime, small_tree, project="proj")
    assert report.files == 5 and report.chunks >= 5
    reads = ActorReads(runtime)
    for mode in ("lexical", "semantic", "hybrid"):
        rows = search(reads, SearchArgs(query="purple kangaroo protocol", mode=mode))  # type: ignore[arg-type]
        assert _sources(rows)[0] == "docs/espresso.md", (mode, _sources(rows))
    status = status_row(runtime)
    assert status.consistent and status.vectors == status.records == report.chunks


def listings(logs: list[dict[str, object]]) -> int:
    """How many times the writer's check listed every id on both sides (the 0 s delay at
    `writer.check.list_ids` logs each pass: IMPRINT_DELAY, imprint/_faults.py)."""
    return sum(e["event"] == "fault.delay" and e["point"] == LIST_IDS for e in logs)


LIST_IDS = "writer.check.list_ids"


def test_a_plain_status_reads_the_indexes_again_only_when_the_store_changed(
    runtime: Runtime, small_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Listing every id on both sides takes seconds at a million records, so the plain
    status keeps its answer while the store is as it was: a write through the writer, a
    commit by another connection or a vector count that moved each reads everything again,
    and the row then tells the truth about it."""
    # The writer's background merges (tests/test_index_merge.py) would run between the steps
    # below, on the connection whose open transaction this test looks at: each one fails
    # before it touches the index.
    monkeypatch.setenv("IMPRINT_FAIL", "writer.merge")
    ingest_path(runtime, small_tree, project="proj")
    monkeypatch.setenv("IMPRINT_DELAY", f"{LIST_IDS}:0")
    with structlog.testing.capture_logs() as logs:
        first = status_row(runtime)
        assert first.consistent and listings(logs) == 1
        # The FTS integrity-check is an INSERT: it leaves no write transaction open behind it.
        store = runtime.workspace(first.workspace)
        assert not store.sqlite.conn.in_transaction
        assert status_row(runtime) == first and listings(logs) == 1  # nothing changed: kept
        # A write through the writer.
        runtime.writer(first.workspace).write(
            Write(batch=WriteBatch(upserts=(Record(id=make_id("note"), content="a new note"),)))
        ).get(timeout=60)
        after_write = status_row(runtime)
        assert listings(logs) == 2 and after_write.records == first.records + 1
        assert after_write.consistent
        drop_one_fts_entry(store.sqlite.path)  # a hand edit through another connection
        damaged = status_row(runtime)
        assert listings(logs) == 3 and not damaged.fts_ok and not damaged.consistent
        assert status_row(runtime) == damaged and listings(logs) == 3
        # A vector removed behind the writer's back (another Chroma client could): the count
        # moved.
        victim = sorted(store.vectors.ids())[0]
        store.vectors.collection.delete(ids=[victim])
        lost = status_row(runtime)
        assert listings(logs) == 4 and lost.only_in_lexical == 1
        assert lost.vectors == first.vectors


def test_filters_and_limit_clamp(runtime: Runtime, small_tree: Path) -> None:
    """Filters narrow by lang and layer; limit is clamped to 1-50."""
    ingest_path(runtime, small_tree, project="proj")
    reads = ActorReads(runtime)
    rows = search(reads, SearchArgs(query="retry with backoff", lang="python", mode="hybrid"))
    assert _sources(rows) == ["src/retry.py"]
    rows = search(reads, SearchArgs(query="actor", layer="docs", limit=0))
    assert len(rows.hits) == 1
    rows = search(reads, SearchArgs(query="actor", limit=500))
    assert len(rows.hits) == status_row(runtime).records
    assert search(reads, SearchArgs(query="actor", project="nope")).hits == ()


def test_bad_search_arguments_name_the_argument(runtime: Runtime, small_tree: Path) -> None:
    """Bad mode, type, empty query and unknown workspace give one-line errors naming them."""
    ingest_path(runtime, small_tree, project="proj")
    reads = ActorReads(runtime)
    with pytest.raises(InputError, match=r"^mode: 'fuzzy' is not allowed; one of hybrid"):
        search(reads, SearchArgs(query="x", mode=checked_mode("fuzzy")))
    with pytest.raises(InputError, match=r"^type: 'poem' is not allowed"):
        search(reads, SearchArgs(query="x", type="poem"))
    with pytest.raises(InputError, match=r"^query: must be non-empty"):
        search(reads, SearchArgs(query="   "))
    with pytest.raises(WorkspaceError, match=r"^workspace: 'ghost' does not exist"):
        search(reads, SearchArgs(query="x"), "ghost")
    with pytest.raises(WorkspaceError, match=r"^workspace: 'Bad!' is not a workspace name"):
        search(reads, SearchArgs(query="x"), "Bad!")


def test_search_output_respects_budget(runtime: Runtime, small_tree: Path) -> None:
    """The formatted search never exceeds max_chars and counts what it hid."""
    ingest_path(runtime, small_tree, project="proj")
    reads = ActorReads(runtime)
    text = search_text(reads, SearchArgs(query="actor"), max_chars=1200)
    assert len(text) <= 1200
    assert text.startswith('search "actor" (hybrid):')
    assert "[1] " in text
    shown = text.count("\n[")
    total = len(search(reads, SearchArgs(query="actor")).hits)
    if shown < total:
        assert f"({total - shown} more result" in text
    assert (
        len(search_text(reads, SearchArgs(query="actor"), max_chars=50)) <= 1200
    )  # clamped up to 1200


def test_workspaces_never_see_each_other(runtime: Runtime, small_tree: Path) -> None:
    """Data ingested into one workspace is invisible from another."""
    runtime.resolve("alpha", create=True)
    runtime.resolve("beta", create=True)
    ingest_path(runtime, small_tree, project="proj", workspace="alpha")
    reads = ActorReads(runtime)
    assert search(reads, SearchArgs(query="espresso ristretto"), "alpha").hits
    for mode in ("hybrid", "semantic", "lexical"):
        rows = search(reads, SearchArgs(query="espresso ristretto", mode=mode), "beta")  # type: ignore[arg-type]
        assert rows.hits == ()
    assert status_row(runtime, "beta").records == 0
    assert status_row(runtime, "alpha").records > 0


def test_reingest_skips_unchanged_replaces_changed_removes_deleted(
    runtime: Runtime, small_tree: Path
) -> None:
    """Unchanged files are skipped, a changed one replaced, a deleted one removed."""
    first = ingest_path(runtime, small_tree, project="proj")
    again = ingest_path(runtime, small_tree, project="proj")
    assert (again.files, again.unchanged, again.chunks) == (0, first.files, 0)

    (small_tree / "docs/gardening.md").write_text("# Beekeeping\n\nBees swarm in May.\n")
    (small_tree / "notes.txt").unlink()
    third = ingest_path(runtime, small_tree, project="proj")
    assert (third.files, third.removed) == (1, 1)
    reads = ActorReads(runtime)
    assert (
        _sources(search(reads, SearchArgs(query="bees swarm", mode="lexical")))[0]
        == "docs/gardening.md"
    )
    assert search(reads, SearchArgs(query="tomatoes compost", mode="lexical")).hits == ()
    assert search(reads, SearchArgs(query="release checklist wheel", mode="lexical")).hits == ()
    status = status_row(runtime)
    assert status.consistent and status.projects["proj"]["sources"] == 4


def test_a_source_whose_records_are_missing_is_ingested_again(
    runtime: Runtime, small_tree: Path
) -> None:
    """The registry says a file is ingested but its records are gone (a store copied while a
    write was half done, or rows deleted by hand): the next ingest writes it again instead of
    skipping it as unchanged."""
    first = ingest_path(runtime, small_tree, project="proj")
    sqlite = runtime.workspace().sqlite
    with sqlite.conn:
        sqlite.conn.execute("DELETE FROM records WHERE source = 'docs/gardening.md'")
    assert (
        search(ActorReads(runtime), SearchArgs(query="tomatoes compost", mode="lexical")).hits == ()
    )
    again = ingest_path(runtime, small_tree, project="proj")
    assert (again.files, again.unchanged) == (1, first.files - 1)
    hits = search(ActorReads(runtime), SearchArgs(query="tomatoes compost", mode="lexical")).hits
    assert hits and hits[0].record.source == "docs/gardening.md"
    assert status_row(runtime).consistent


def test_unreadable_and_missing_paths_change_nothing(runtime: Runtime, tmp_path: Path) -> None:
    """A missing path is refused with a clear error and nothing is written."""
    with pytest.raises(InputError, match=r"^path: '.*nowhere' does not exist"):
        ingest_path(runtime, tmp_path / "nowhere")
    assert status_row(runtime).records == 0


def test_binaries_and_oversized_files_are_skipped(runtime: Runtime, tmp_path: Path) -> None:
    """A binary and a file over ingest.max_file_bytes are skipped, not ingested."""
    tree = tmp_path / "t"
    tree.mkdir()
    (tree / "ok.md").write_text("# Fine\n\nA readable note.")
    (tree / "bin.txt").write_bytes(b"\x00\x01\x02binary")
    (tree / "big.txt").write_text("x" * (runtime.config.ingest.max_file_bytes + 1))
    (tree / "image.png").write_bytes(b"\x89PNG")
    report = ingest_path(runtime, tree, project="t")
    assert report.files == 1 and report.skipped == 3


def test_gitignore_is_respected_in_a_git_checkout(runtime: Runtime, tmp_path: Path) -> None:
    """Files that .gitignore excludes in a git checkout are never ingested."""
    import subprocess

    tree = tmp_path / "repo"
    tree.mkdir()
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    (tree / ".gitignore").write_text("secret/\n*.log.md\n")
    (tree / "kept.md").write_text("# Kept\n\nvisible text")
    (tree / "secret").mkdir()
    (tree / "secret/keys.md").write_text("# Keys\n\nhidden text")
    (tree / "debug.log.md").write_text("# Log\n\nhidden too")
    report = ingest_path(runtime, tree, project="repo")
    assert report.files == 1
    assert search(ActorReads(runtime), SearchArgs(query="hidden", mode="lexical")).hits == ()


def test_a_second_process_cannot_open_an_owned_embedded_store(
    data_dir: Path, embedder: Embedder
) -> None:
    """The embedded Chroma folder has one owner; a second opener gets StoreBusyError."""
    first = Runtime(data_dir, Config(), embedder=embedder).start()
    second = Runtime(data_dir, Config(), embedder=embedder).start()
    try:
        first.workspace("")
        with pytest.raises(StoreBusyError, match="is owned by process"):
            second.workspace("")
    finally:
        second.stop()
        first.stop()


def test_writes_are_acknowledged_only_when_both_indexes_hold_them(
    runtime: Runtime, embedder: Embedder
) -> None:
    """After a write returns, Chroma and FTS5 both hold every record it carried."""
    ws = runtime.resolve("")
    store = runtime.workspace(ws)
    records = tuple(
        Record(id=make_id("m", i), content=f"memory number {i} about lighthouses", project="p")
        for i in range(7)
    )
    ack = runtime.writer(ws).write(Write(batch=WriteBatch(upserts=records))).get(timeout=60)
    assert ack.upserted == 7
    ids = {r.id for r in records}
    assert ids <= store.vectors.ids()
    reader = store.reader()
    try:
        assert ids <= reader.ids()
        assert len(reader.match("lighthouses", 50, Filters())) == 7
    finally:
        reader.close()


def _search_together(runtime: Runtime, queries: tuple[str, ...]) -> dict[str, object]:
    """Lexical searches of `queries`, each in its own thread, all started at once."""
    reads = ActorReads(runtime)
    results: dict[str, object] = {}
    errors: list[BaseException] = []

    def run(query: str) -> None:
        try:
            results[query] = search(reads, SearchArgs(query=query, mode="lexical"))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(q,)) for q in queries]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    return results


def test_two_searches_run_at_the_same_time_in_the_reader_pool(
    runtime: Runtime, small_tree: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two searches in the reader pool run at the same time: with every lexical query
    stalled in its reader, the trace shows both stalled at once."""
    configure_logging(data_dir, level="error")
    ingest_path(runtime, small_tree, project="proj")
    stall(monkeypatch, "lexical_query", 1.5)
    results = _search_together(runtime, ("espresso", "tomatoes"))
    assert in_flight_at_once(data_dir, "lexical_query") == 2
    assert _sources(results["espresso"])[0] == "docs/espresso.md"
    assert _sources(results["tomatoes"])[0] == "docs/gardening.md"


def test_vector_and_lexical_halves_of_one_search_run_concurrently(
    runtime: Runtime, small_tree: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hybrid search sends both reads before waiting: with every read stalled in its
    reader, the trace shows the vector and the lexical read of that one search stalled at
    once."""
    configure_logging(data_dir, level="error")
    ingest_path(runtime, small_tree, project="proj")
    stall(monkeypatch, "read", 1.5)
    rows = search(ActorReads(runtime), SearchArgs(query="espresso"))
    assert _sources(rows)[0] == "docs/espresso.md"
    assert in_flight_at_once(data_dir, "read") == 2
    kinds = [e["message"] for e in reader_messages(data_dir)[-4:]]
    assert sorted(kinds[:2]) == ["lexical_query", "vector_query"], kinds
    assert sorted(kinds[2:]) == ["fetch_records", "supersede_links"], kinds


def test_a_pool_of_one_runs_two_searches_one_after_the_other(
    data_dir: Path, embedder: Embedder, small_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Control for the test above: with readers.pool_size=1 the two searches serialize,
    so no two stalled lexical queries are ever in the reader at once."""
    configure_logging(data_dir, level="error")
    config = Config()
    config.readers.pool_size = 1
    rt = Runtime(data_dir, config, embedder=embedder).start()
    try:
        ingest_path(rt, small_tree, project="proj")
        stall(monkeypatch, "lexical_query", 0.5)
        _search_together(rt, ("espresso", "tomatoes"))
        assert len(reader_messages(data_dir, message="lexical_query")) >= 2
        assert in_flight_at_once(data_dir, "lexical_query") == 1
    finally:
        rt.stop()


def test_embedded_stores_in_one_process_never_share_vectors(
    tmp_path: Path, embedder: Embedder, small_tree: Path
) -> None:
    """Two data dirs and two workspaces in one process: each Chroma folder holds its own."""
    import chromadb

    first = Runtime(tmp_path / "one", Config(), embedder=embedder).start()
    try:
        ingest_path(first, small_tree, project="proj")
        first.resolve("other", create=True)
        ingest_path(first, small_tree / "docs", project="docs", workspace="other")
    finally:
        first.stop()
    second = Runtime(tmp_path / "two", Config(), embedder=embedder).start()
    try:
        second.workspace("")
        assert second.workspace("").vectors.count() == 0
    finally:
        second.stop()
    for ws, expected in (("default", 5), ("other", 3)):
        folder = tmp_path / "one" / "workspaces" / ws / "chroma"
        with chromadb.PersistentClient(path=str(folder)) as client:
            names = [c.name for c in client.list_collections()]
            assert names == [f"imprint.{ws}.v1"]
            assert client.get_collection(names[0]).count() == expected


def _descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts /proc/self/fd")
def test_closing_a_store_releases_its_descriptors(tmp_path: Path, embedder: Embedder) -> None:
    """Workspace stores opened, written, searched and closed ten times (a new data dir each
    time, then the first again) leave no descriptor behind per cycle: the store closes its
    embedded Chroma client (never closed, each kept its SQLite and HNSW files open, six
    descriptors a store, and CI reached 1,024). Closing one neither disturbs a store open
    on another folder nor one whose folder a second client of it opened and closed."""
    rng = np.random.default_rng(7)

    def cycle(data: Path) -> None:
        store = WorkspaceStore(data, WorkspaceName("default"), embedder)
        try:
            records = [Record(id=make_id("fd", str(i)), content=f"note {i}") for i in range(20)]
            vectors = rng.standard_normal((len(records), 384)).astype(np.float32)
            store.vectors.upsert(records, vectors)
            assert len(store.vectors.query(vectors[0], 5, Filters())) == 5
        finally:
            store.close()

    kept = WorkspaceStore(tmp_path / "kept", WorkspaceName("default"), embedder)
    try:
        rec = Record(id=make_id("kept"), content="the store that stays open")
        kept.vectors.upsert([rec], rng.standard_normal((1, 384)).astype(np.float32))
        second = VectorIndex(
            open_client(kept.folder / "chroma", ""), WorkspaceName("default"), embedder
        )
        assert second.ids() == {rec.id}
        second.close()
        cycle(tmp_path / "warm")  # Chroma's and SQLite's first use open what they keep
        before = _descriptors()
        for i in range(10):
            cycle(tmp_path / ("warm" if i == 9 else f"d{i}"))
        after = _descriptors()
        assert after - before <= 3, (before, after)
        assert kept.vectors.ids() == {rec.id}
        assert kept.vectors.neighbors(rec.id, 1) == []
    finally:
        kept.close()


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts /proc/self/fd")
def test_a_runtime_on_a_chroma_server_releases_its_client_when_stopped(
    tmp_path: Path, embedder: Embedder, chroma_server: str
) -> None:
    """A runtime started, searched and stopped against a `chroma run` server, eight times,
    leaves no descriptor behind per cycle: its shared HTTP client is closed, session and all
    (before: two descriptors a cycle, 8 -> 22)."""
    config = Config()
    config.store.chroma_url = chroma_server

    def cycle(data: Path) -> None:
        runtime = Runtime(data, config, embedder=embedder, reindex=False).start()
        try:
            assert search(ActorReads(runtime), SearchArgs(query="hello world")).hits == ()
        finally:
            assert runtime.stop() == []

    cycle(tmp_path / "warm")
    before = _descriptors()
    for i in range(8):
        cycle(tmp_path / f"d{i}")
    assert _descriptors() - before <= 2, (before, _descriptors())


def test_a_readers_store_has_no_writes_and_its_connection_refuses_them(
    tmp_path: Path, embedder: Embedder
) -> None:
    """A reader actor's store (`WorkspaceStore.reader()`) answers the reads (a write the
    writer's store applied included) but offers none of the writer's methods, and its
    connection is read-only; the writer's store has the reads and the writes."""
    store = WorkspaceStore(tmp_path / "data", WorkspaceName("default"), embedder)
    try:
        rec = Record(id=make_id("kept"), content="a note the reader reads", project="p")
        store.sqlite.apply(WriteBatch(upserts=(rec,)), None)
        reader = store.reader()
        try:
            assert type(reader) is SqliteReader and isinstance(store.sqlite, SqliteWriter)
            assert reader.fetch([rec.id])[rec.id] == rec
            assert reader.match("note reader", 5, Filters())[0][0] == rec.id
            writes = ("apply", "journal_begin", "journal_quarantine", "set_meta", "merge_index")
            assert all(hasattr(store.sqlite, name) for name in writes)
            assert not [name for name in writes if hasattr(reader, name)]
            with pytest.raises(sqlite3.OperationalError, match="readonly"):
                reader.conn.execute("INSERT INTO meta VALUES ('k', 'v')")
        finally:
            reader.close()
    finally:
        store.close()
