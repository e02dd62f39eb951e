"""The reads layer: deadlines reach the readers, least-loaded pools, pooled recall actors,
request ids from the edge, an all-or-nothing start and a stop that tries everything."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pykka
import pytest
from mcp.client import Client

from benchmark._direct import DirectReads
from imprint.actors import read_messages
from imprint.actors._pool import ActorPool, Load
from imprint.actors.lifecycle import Runtime
from imprint.actors.read_messages import (
    Family,
    FetchRecords,
    LexicalAndPhrase,
    LexicalQuery,
    ReadMessage,
)
from imprint.actors.writer import WriterActor
from imprint.config import Config
from imprint.errors import SkippedLate
from imprint.logs import configure_logging, log_path
from imprint.reads.gateway import ActorReads
from imprint.reads.search import SearchArgs, search
from imprint.reads.sources import ListSourcesArgs, source_rows
from imprint.recall.coordinator import StepRunner
from imprint.recall.respond import RecallArgs, recall_text
from imprint.server import build_server
from imprint.store.embedder import Embedder
from imprint.store.records import SourceRow
from imprint.types import WorkspaceName
from imprint.writes.files import ingest_path
from tests.conftest import TOPICS, write_tree
from tests.support.trace_support import events as trace
from tests.support.trace_support import reader_messages, stall


def _events(data: Path) -> list[dict[str, Any]]:
    lines = log_path(data).read_text(encoding="utf-8").splitlines()
    return [e for e in map(json.loads, lines) if e.get("event") == "actor.message"]


@pytest.fixture
def logged_runtime(tmp_path: Path, embedder: Embedder) -> Any:
    data = tmp_path / "data"
    configure_logging(data, level="error")
    rt = Runtime(data, Config(), embedder=embedder).start()
    ingest_path(rt, write_tree(tmp_path / "p", TOPICS), project="proj")
    try:
        yield rt, data
    finally:
        rt.stop()


def test_a_reader_skips_a_message_whose_deadline_passed(logged_runtime: Any) -> None:
    """A read message that reaches its reader after its deadline is not run: the caller gets
    SkippedLate and the log says `skipped_late`."""
    rt, data = logged_runtime
    late = FetchRecords(workspace=WorkspaceName("default"), ids=(), deadline=time.monotonic() - 1)
    with pytest.raises(SkippedLate):
        rt.pool(Family.LEXICAL).send(late).get(timeout=30)
    outcomes = [e["outcome"] for e in _events(data) if e["message"] == "fetch_records"]
    assert outcomes[-1] == "skipped_late"


def test_pool_prefers_idle_then_the_freshest_busy_actor() -> None:
    """Least-loaded: a message never goes to an actor stuck on an older message while another
    has fewer or younger outstanding ones."""

    class Echo(pykka.ThreadingActor):
        def __init__(self, load: Load, gate: threading.Event) -> None:
            super().__init__()
            self.load, self.gate = load, gate

        def run(self, block: bool) -> int:
            try:
                if block:
                    self.gate.wait(timeout=30)
                return 1
            finally:
                self.load.done()

    gate = threading.Event()
    pool: ActorPool[Any] = ActorPool("test", 3, lambda i, load: Echo.start(load, gate))
    try:
        stuck = pool.send(lambda p: p.run(True))  # actor 0, stuck until the gate opens
        assert pool.loads() == [1, 0, 0]
        # Keep 1 and 2 busy with queued work too: equal loads now, actor 0's is the oldest.
        held = [pool.send(lambda p: p.run(True)) for _ in range(2)]
        assert pool.loads() == [1, 1, 1]
        pool.send(lambda p: p.run(True))
        assert pool.loads()[0] == 1  # not the stuck one
        gate.set()
        assert stuck.get(timeout=30) == 1 and all(f.get(timeout=30) == 1 for f in held)
    finally:
        gate.set()
        pool.stop()


def _pooled_runtime(tmp_path: Path, embedder: Embedder, pool_size: int) -> tuple[Runtime, Path]:
    data = tmp_path / "data"
    configure_logging(data, level="error")
    config = Config()
    config.readers.pool_size = pool_size
    rt = Runtime(data, config, embedder=embedder).start()
    ingest_path(rt, write_tree(tmp_path / "p", TOPICS), project="proj")
    return rt, data


def _first_recall_id(data: Path) -> str:
    return next(e["recall_id"] for e in _events(data) if e["message"] == "recall.gather")


def test_next_recall_does_not_wait_behind_a_timed_out_step(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recall whose step hangs on a reader (its lexical query stalled there) times out;
    the next recall's reads go to the other readers and return while the first is still
    stuck (blind round-robin handed the third read to the stuck reader)."""
    rt, data = _pooled_runtime(tmp_path, embedder, pool_size=3)
    try:
        reads = ActorReads(rt)
        stall(monkeypatch, "lexical_query", 5.0)
        slow = [{"tool": "search", "args": {"query": "slowstep espresso", "mode": "lexical"}}]
        first = recall_text(reads, RecallArgs(question="first", plan=slow), timeout_sec=1.0)
        first_id = _first_recall_id(data)
        assert ": timeout" in first
        assert [e["point"] for e in trace(data) if e.get("event") == "fault.delay"] == [
            "reader.lexical_query"
        ]
        monkeypatch.delenv("IMPRINT_DELAY")  # the next reads are not stalled
        plan = [
            {"tool": "search", "args": {"query": q, "mode": "lexical"}}
            for q in ("espresso grind", "tomatoes sun", "compost heap")
        ]
        second = recall_text(reads, RecallArgs(question="second", plan=plan), timeout_sec=30.0)
        # The first recall's read is still stuck: its reader has not answered it yet.
        assert reader_messages(data, recall_id=first_id) == []
        assert ": timeout" not in second, second
        assert "docs/espresso.md#0" in second and "docs/gardening.md" in second
    finally:
        rt.stop()
    events = _events(data)
    steps = [e for e in events if e.get("recall_id") == first_id and e["message"] == "recall.step"]
    assert [e["outcome"] for e in steps] == ["timeout"]


def test_reads_queued_behind_a_timed_out_step_are_skipped(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With one reader, a timed-out recall's read queued behind its stuck read (every read
    stalled past the deadline) carries the recall's deadline: when the reader gets to it,
    it is skipped, not run."""
    rt, data = _pooled_runtime(tmp_path, embedder, pool_size=1)
    try:
        reads = ActorReads(rt)
        stall(monkeypatch, "read", 3.0)
        slow = [
            {"tool": "search", "args": {"query": "slowstep espresso"}},
            {"tool": "file_chunks", "args": {"source": "docs/espresso.md"}},
        ]
        first = recall_text(reads, RecallArgs(question="first", plan=slow), timeout_sec=1.0)
        assert ": timeout" in first
        monkeypatch.delenv("IMPRINT_DELAY")
        after = recall_text(
            reads,
            RecallArgs(question="after", plan=[{"tool": "search", "args": {"query": "espresso"}}]),
        )
        assert "docs/espresso.md#0" in after
    finally:
        rt.stop()
    first_id = _first_recall_id(data)
    lexical = [
        (e["message"], e["outcome"])
        for e in reader_messages(data, recall_id=first_id)
        if e["actor"].startswith("LexicalReader")
    ]
    # Which of the two reads the reader took first is a race; the other waited behind it.
    assert sorted(m for m, _ in lexical) == ["lexical_and_phrase", "source_chunks"], lexical
    assert [o for _, o in lexical] == ["ok", "skipped_late"], lexical


def test_recall_actors_are_pooled_not_started_per_recall(logged_runtime: Any) -> None:
    """Step runners and coordinators start once per runtime; recalls reuse them."""
    rt, _ = logged_runtime
    reads = ActorReads(rt)
    plan = [
        {"tool": "search", "args": {"query": "espresso"}},
        {"tool": "kg_query", "args": {}},
    ]
    recall_text(reads, RecallArgs(question="q", plan=plan))
    runners = pykka.ActorRegistry.get_by_class(StepRunner)
    assert len(runners) == rt.config.recall.step_runners
    for _ in range(3):
        recall_text(reads, RecallArgs(question="q", plan=plan))
    assert pykka.ActorRegistry.get_by_class(StepRunner) == runners


def test_direct_and_actor_reads_give_the_same_rows(logged_runtime: Any) -> None:
    """DirectReads runs the readers' own logic objects: same rows as through the actors."""
    rt, _ = logged_runtime
    direct = DirectReads(rt)
    try:
        for mode in ("hybrid", "semantic", "lexical"):
            a = search(ActorReads(rt), SearchArgs(query="espresso shot grind", mode=mode))  # type: ignore[arg-type]
            b = search(direct, SearchArgs(query="espresso shot grind", mode=mode))  # type: ignore[arg-type]
            assert a == b
    finally:
        direct.close()


def test_every_read_message_kind_is_distinct() -> None:
    """Each reader message class has a kind of its own (the trace's `message` field), so a
    trace tells a hybrid search's lexical-and-phrase read from a plain lexical one."""
    classes = [getattr(read_messages, name) for name in read_messages.__all__]
    kinds = [
        c.kind
        for c in classes
        if isinstance(c, type) and issubclass(c, ReadMessage) and c is not ReadMessage
    ]
    assert len(kinds) == 21 and len(set(kinds)) == len(kinds), sorted(kinds)
    assert (LexicalQuery.kind, LexicalAndPhrase.kind) == ("lexical_query", "lexical_and_phrase")


def test_source_rows_are_typed_rows_with_their_chunk_counts(logged_runtime: Any) -> None:
    """list_sources rows come back as `SourceRow`s: one per ingested source, with its
    project, type and chunk count, the same through the actors as in the caller's thread."""
    rt, _ = logged_runtime
    reads = ActorReads(rt)
    rows, total = source_rows(reads, reads.open(""), ListSourcesArgs(project="proj"))
    assert rows and total == len(rows)
    assert all(isinstance(r, SourceRow) and r.project == "proj" for r in rows)
    assert all(r.source_type == "file" and r.chunks >= 1 for r in rows)
    direct = DirectReads(rt)
    try:
        assert source_rows(direct, direct.open(""), ListSourcesArgs(project="proj")) == (
            rows,
            total,
        )
    finally:
        direct.close()


def test_each_tool_call_binds_one_request_id_at_the_edge(logged_runtime: Any) -> None:
    """Every reader message a search causes carries that call's request id; two calls, two."""
    rt, data = logged_runtime
    server = build_server(rt)

    async def go() -> None:
        async with Client(server) as client:
            for query in ("espresso grind", "tomatoes sun"):
                result = await client.call_tool("search", {"query": query})
                assert not result.is_error

    anyio.run(go)
    reads = [e for e in _events(data) if e["message"] in ("vector_query", "lexical_and_phrase")]
    ids = [e["request_id"] for e in reads[-4:]]  # 2 searches x (vector, lexical + phrase)
    assert len(set(ids)) == 2 and ids.count(ids[0]) == 2


def test_start_is_all_or_nothing(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure while starting (the fact readers, the last pool: IMPRINT_FAIL) stops every
    actor that did start, and is raised."""
    monkeypatch.setenv("IMPRINT_FAIL", "readers.start.fact")
    with pytest.raises(RuntimeError, match=r"^failpoint readers\.start\.fact$"):
        Runtime(tmp_path / "data", Config(), embedder=embedder).start()
    assert pykka.ActorRegistry.get_all() == []


def test_stop_tries_every_part_and_reports_each_failure(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One writer whose stop fails (IMPRINT_FAIL at its stop) does not keep the other
    writer, the readers or the stores from stopping; the failure is returned and logged."""
    data = tmp_path / "data"
    configure_logging(data, level="error")
    rt = Runtime(data, Config(), embedder=embedder).start()
    rt.workspace("alpha", create=True)
    rt.workspace("beta", create=True)
    monkeypatch.setenv("IMPRINT_FAIL", "runtime.stop.writer.alpha")
    failures = rt.stop()
    assert failures == ["writer alpha: RuntimeError: failpoint runtime.stop.writer.alpha"]
    alive = pykka.ActorRegistry.get_all()
    assert [a.actor_class for a in alive] == [WriterActor]  # everything else stopped
    assert alive[0].proxy().actor_name.get() == "Writer[alpha]"
    alive[0].stop(block=True)
    logged = log_path(data).read_text(encoding="utf-8")
    assert '"runtime.stop_failed"' in logged


def test_the_status_row_is_a_read_through_reads(rt: Runtime) -> None:
    """The status row lives with the reads and takes a `Reads`: the writer's check of the
    workspace through `Reads.check`, the same row the old address gives."""
    from imprint.reads.gateway import ActorReads
    from imprint.reads.status import status_row
    from imprint.writes import repair
    from imprint.writes.gateway import Writes
    from imprint.writes.memories import store_memory

    store_memory(Writes(rt), "Tealmoth status: one memory for the status row to count.")
    row = status_row(ActorReads(rt), "", check=True)
    assert row.records == 1 and row.consistent and row.store == "embedded"
    assert repair.status_row(rt, "", True) == row
    assert not hasattr(Writes, "check")  # one copy of the check, in the reads gateway


def test_the_deadline_lives_once_below_reads_and_writes() -> None:
    """One deadline piece, in the actors' floor that reads, writes and ingest all stand on:
    the old `imprint.reads.deadline` address gives the very same objects, and no module of
    writes/ or ingest/ reaches sideways into reads/ for it (imports: moved in parallel)."""
    import imprint
    from imprint.actors import deadline
    from imprint.reads import deadline as old

    assert (old.Deadline, old.Pending, old.Done, old.call_deadline) == (
        deadline.Deadline,
        deadline.Pending,
        deadline.Done,
        deadline.call_deadline,
    )
    root = Path(imprint.__file__).parent
    sideways = [
        str(p.relative_to(root))
        for folder in ("writes", "ingest")
        for p in sorted((root / folder).rglob("*.py"))
        if "imprint.reads.deadline" in p.read_text(encoding="utf-8")
    ]
    assert sideways in ([], ["writes/imports.py"]), sideways
