"""The BM25 index's segments are merged by the writer after writes: every query reads each
segment, and FTS5 alone leaves up to three at each level. Merging keeps every ranking
exactly (scores, ties and all); what it buys in time is measured by benchmark/concurrency.py,
not asserted here."""

from __future__ import annotations

import random
import threading
from pathlib import Path

import pytest
import structlog

from imprint.actors.write_messages import Check, MergeIndex, Write
from imprint.actors.writer import Writer, WriterActor, WriterProxy
from imprint.store.embedder import Embedder
from imprint.store.records import Filters, Record, WriteBatch
from imprint.store.sqlite_write import SqliteWriter
from imprint.store.workspace import WorkspaceStore
from imprint.types import MemoryId, WorkspaceName
from tests.conftest import drop_one_fts_entry

COMMON = ["the", "server", "how", "an", "in", "actor", "search", "index"]
RARE = ["pykka", "structlog", "zebra", "quokka", "sqlite", "merge", "segment", "mopidy"]
QUERIES = [
    "how does the server index an actor",
    "pykka actor",
    "zebra quokka",
    "the",
    "merge segment sqlite",
    "server in the index",
    "mopidy",
]


def _text(rng: random.Random) -> str:
    words = rng.choices(COMMON, k=rng.randint(3, 12)) + rng.sample(RARE, k=rng.randint(0, 2))
    rng.shuffle(words)
    return " ".join(words)


def _records(rng: random.Random, start: int, n: int) -> tuple[Record, ...]:
    return tuple(
        Record(id=MemoryId(f"r{i:04d}"), content=_text(rng), project=("a", "b")[i % 2])
        for i in range(start, start + n)
    )


def _rankings(store: SqliteWriter) -> list[object]:
    out: list[object] = []
    for query in QUERIES:
        for filters in (Filters(), Filters(project="b")):
            out.append(store.match_and_phrase(query, 30, filters))
    return out


def _merge_all(store: SqliteWriter) -> int:
    steps = 0
    while store.merge_index():
        steps += 1
        assert steps < 1000, "merging never ends"
    return steps


def test_merging_keeps_every_ranking_and_leaves_fewer_segments(tmp_path: Path) -> None:
    """40 writes of 3 records each (one transaction, one new segment each) leave several
    segments; merging leaves fewer, and every ranking (ids, scores, order of ties) is the
    one before. Then there is nothing left to merge, until the next write."""
    rng = random.Random(7)
    store = SqliteWriter(tmp_path / "s.sqlite3")
    try:
        for k in range(40):
            store.apply(WriteBatch(upserts=_records(rng, k * 3, 3)), None)
        before, ranked = store.index_segments(), _rankings(store)
        assert before >= 4
        assert _merge_all(store) >= 1
        after = store.index_segments()
        assert after < before and after <= 2
        assert _rankings(store) == ranked
        assert store.merge_index() is False  # nothing done, nothing changed
        assert store.index_segments() == after

        store.apply(WriteBatch(upserts=_records(rng, 500, 3)), None)
        store.apply(WriteBatch(delete_ids=(MemoryId("r0001"), MemoryId("r0002"))), None)
        grown, ranked = store.index_segments(), _rankings(store)
        assert grown > after
        _merge_all(store)
        assert store.index_segments() < grown
        assert _rankings(store) == ranked
    finally:
        store.close()


def test_merge_steps_are_bounded_in_pages(tmp_path: Path) -> None:
    """A step writes about `pages` pages: merging an index of some 50 pages a page at a time
    takes many steps, each its own transaction, so the writer's other messages can go
    between them."""
    rng = random.Random(3)
    vocab = [f"w{i}" for i in range(3000)]  # many words: the index spans dozens of pages
    store = SqliteWriter(tmp_path / "s.sqlite3")
    try:
        for k in range(60):
            records = tuple(
                Record(id=MemoryId(f"r{k * 4 + j}"), content=" ".join(rng.choices(vocab, k=150)))
                for j in range(4)
            )
            store.apply(WriteBatch(upserts=records), None)
        queries = [" ".join(rng.sample(vocab, 3)) for _ in range(10)]
        ranked = [store.match(q, 30, Filters()) for q in queries]
        assert store.index_segments() >= 4
        steps = 0
        while store.merge_index(pages=1):
            steps += 1
            assert steps < 10_000
        assert steps >= 10
        assert store.index_segments() <= 2
        assert [store.match(q, 30, Filters()) for q in queries] == ranked
    finally:
        store.close()


class _Recorded(Writer):
    """The real writer, recording the order in which its writes and merge steps ran; its
    first write waits until the test lets it go."""

    def __init__(self, store: WorkspaceStore, embedder: Embedder) -> None:
        super().__init__(store, embedder)
        self.order: list[str] = []
        self.release = threading.Event()
        self.merged_all = threading.Event()

    def write(self, batch: WriteBatch, embeddings: object = None) -> object:  # type: ignore[override]
        if not self.order:
            assert self.release.wait(30)
        self.order.append("write")
        return super().write(batch, embeddings)  # type: ignore[arg-type]

    def merge_step(self) -> bool:
        more = super().merge_step()
        self.order.append("merge" if more else "idle")
        if not more:
            self.merged_all.set()
        return more


def test_the_writer_merges_after_the_writes_already_queued(
    tmp_path: Path, embedder: Embedder
) -> None:
    """Eight writes queued while the first is applied all go before the first merge step
    (it is sent behind them); the writer then merges on its own until nothing is left, and
    a search ranks as it did before."""
    store = WorkspaceStore(tmp_path / "data", WorkspaceName("default"), embedder)
    logic = _Recorded(store, embedder)
    ref = WriterActor.start(logic)
    writer = ref.proxy()
    try:
        rng = random.Random(11)
        acks = [
            writer.write(Write(batch=WriteBatch(upserts=_records(rng, k * 3, 3)))) for k in range(9)
        ]
        logic.release.set()
        for ack in acks:
            ack.get(timeout=60)
        assert logic.merged_all.wait(60)
        assert logic.order[:9] == ["write"] * 9
        assert logic.order[9] == "merge"
        assert logic.order[-1] == "idle"
        segments = store.sqlite.index_segments()
        assert segments <= 2
        ranked = _rankings(store.sqlite)
        # Asked directly, there is nothing left to do.
        assert writer.merge_index(MergeIndex()).get(timeout=30) is False
        assert _rankings(store.sqlite) == ranked
    finally:
        ref.stop()
        store.close()


def test_a_failed_merge_step_is_logged_and_writes_go_on(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A merge step that fails (the disk full, say: an SQLite error at `writer.merge`,
    IMPRINT_FAIL) stops merging until the next write, which is applied as usual: the index
    answers, with more segments to read."""
    store = WorkspaceStore(tmp_path / "data", WorkspaceName("default"), embedder)
    logic = Writer(store, embedder)
    monkeypatch.setenv("IMPRINT_FAIL", "writer.merge")
    with structlog.testing.capture_logs() as logs:
        assert logic.merge_step() is False
    assert [e["event"] for e in logs] == ["writer.merge_failed"]
    assert logs[0]["error"] == "failpoint writer.merge"
    ref = WriterActor.start(logic)
    writer: WriterProxy = ref.proxy()  # type: ignore[assignment]
    try:
        rng = random.Random(5)
        with structlog.testing.capture_logs() as logs:
            for k in range(3):
                ack = writer.write(Write(batch=WriteBatch(upserts=_records(rng, k * 3, 3))))
                assert ack.get(timeout=60).upserted == 3
                writer.check(Check()).get(timeout=60)  # behind the write's merge step
                failed = [e for e in logs if e["event"] == "writer.merge_failed"]
                assert len(failed) == k + 1  # each write asks for a merge again
        assert len(store.sqlite.ids()) == 9
    finally:
        ref.stop()
        store.close()


@pytest.mark.parametrize("upkeep", [True, False])
def test_a_store_opened_by_the_owning_runtime_is_merged(
    tmp_path: Path, embedder: Embedder, upkeep: bool
) -> None:
    """A store left with many segments (by an older version, or a one-shot command that
    stopped) is merged once the owning runtime opens it; a one-shot command's runtime
    (`reindex=False`) leaves it as it is."""
    from imprint.actors.lifecycle import Runtime
    from imprint.actors.write_messages import Check
    from imprint.config import Config

    data = tmp_path / "data"
    WorkspaceStore(data, WorkspaceName("default"), embedder).close()  # the folder, made
    sqlite = SqliteWriter(data / "workspaces" / "default" / "imprint.sqlite3")
    rng = random.Random(13)
    for k in range(30):
        sqlite.apply(WriteBatch(upserts=_records(rng, k * 3, 3)), None)
    before = sqlite.index_segments()
    sqlite.close()
    assert before >= 4
    rt = Runtime(data, Config(), embedder=embedder, reindex=upkeep).start()
    try:
        store = rt.workspace()
        writer = rt.writer(WorkspaceName("default"))
        # Opening asked the writer to `merge_soon`, which queues the first step: the first
        # check is answered after the ask, the second after that step.
        for _ in range(2):
            writer.check(Check()).get(timeout=60)
        after = store.sqlite.index_segments()
        assert (after < before) is upkeep
    finally:
        rt.stop()


def test_a_kept_status_answer_holds_across_merge_steps_not_across_other_commits(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`check` keeps its answer while the store is as it was; a merge step changes no
    record, so the answer is still given after it without listing every id again. A commit
    by another connection right after a merge step is still seen."""
    store = WorkspaceStore(tmp_path / "data", WorkspaceName("default"), embedder)
    logic = Writer(store, embedder)
    # A 0 s delay at the check's listing logs each time it lists every id (imprint/_faults.py).
    monkeypatch.setenv("IMPRINT_DELAY", "writer.check.list_ids:0")

    def listed() -> int:
        return sum(e["event"] == "fault.delay" for e in logs)

    try:
        rng = random.Random(17)
        for k in range(12):
            logic.write(WriteBatch(upserts=_records(rng, k * 3, 3)))
        with structlog.testing.capture_logs() as logs:
            first = logic.check()
            assert listed() == 1 and first.fts_ok and first.records == 36
            assert logic.merge_step() is True
            assert logic.check() == first and listed() == 1  # kept
            while logic.merge_step():
                pass
            assert logic.check() == first and listed() == 1
            drop_one_fts_entry(store.sqlite_path)  # a hand edit through another connection
            logic.merge_step()
            damaged = logic.check()
            assert listed() == 2 and not damaged.fts_ok
    finally:
        store.close()


def test_a_merge_step_that_crashes_does_not_stop_later_merges(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not an SQLite error (a bug, say: the first step raises at `writer.merge_step`,
    IMPRINT_FAIL): the step fails, and the next write still asks for merging again instead
    of finding a merge forever marked as queued."""
    store = WorkspaceStore(tmp_path / "data", WorkspaceName("default"), embedder)
    logic = Writer(store, embedder)
    monkeypatch.setenv("IMPRINT_FAIL", "writer.merge_step:1")
    ref = WriterActor.start(logic)
    writer: WriterProxy = ref.proxy()  # type: ignore[assignment]
    try:
        rng = random.Random(19)
        with structlog.testing.capture_logs() as logs:
            for k in range(2):
                batch = WriteBatch(upserts=_records(rng, k * 3, 3))
                writer.write(Write(batch=batch)).get(timeout=60)
            writer.check(Check()).get(timeout=60)  # behind the second write's merge step
        merges = [
            e["outcome"]
            for e in logs
            if e["event"] == "actor.message" and e["message"] == "merge_index"
        ]
        assert merges[:2] == ["error", "ok"], merges
    finally:
        ref.stop()
        store.close()
