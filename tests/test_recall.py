"""recall: plan validation, concurrent steps under one deadline, merging and budgets."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from chromadb.api.models.Collection import Collection
from mcp.client import Client

from benchmark._direct import DirectReads
from imprint.actors.lifecycle import Runtime
from imprint.config import Config
from imprint.errors import InputError
from imprint.logs import configure_logging
from imprint.reads.gateway import ActorReads
from imprint.reads.layout import MIN_EXCERPT
from imprint.reads.search import SearchArgs, planned_vector_query, search, search_text
from imprint.recall import plan as plan_module
from imprint.recall.coordinator import run_plan
from imprint.recall.evidence import Item, StepResult, merge
from imprint.recall.plan import parse_plan
from imprint.recall.respond import RecallArgs, recall_text
from imprint.server import build_server
from imprint.store.embedder import Embedder
from imprint.writes.files import ingest_path
from imprint.writes.gateway import Writes
from imprint.writes.memories import store_memory
from tests.conftest import TOPICS, write_tree
from tests.support.trace_support import (
    LogWatch,
    events,
    in_flight_at_once,
    reader_messages,
    stall,
)


@pytest.fixture
def rt(tmp_path: Path, embedder: Embedder) -> Iterator[Runtime]:
    runtime = Runtime(tmp_path / "data", Config(), embedder=embedder).start()
    try:
        ingest_path(runtime, write_tree(tmp_path / "proj", TOPICS), project="proj")
        yield runtime
    finally:
        runtime.stop()


@pytest.fixture
def logged(rt: Runtime) -> Path:
    """The data dir of `rt`, its actors' trace now written to its log."""
    configure_logging(rt.data_dir, level="error")
    return rt.data_dir


def recall(rt: Runtime, question: str, plan: Any = None, **kw: Any) -> str:
    asked = {k: kw.pop(k) for k in ("max_chars", "condense") if k in kw}
    return recall_text(ActorReads(rt), RecallArgs(question=question, plan=plan, **asked), **kw)


def ids_in(text: str) -> list[str]:
    return re.findall(r"^\[\d+\] (\S+) \|", text, re.M)


# -- plan validation ----------------------------------------------------------------------

BAD_PLANS = [
    ([{"tool": "grep", "args": {}}], r"^plan: step 1: unknown tool 'grep'; allowed: search"),
    ([{"tool": "store", "args": {"content": "x"}}], r"^plan: step 1: 'store' is a write"),
    ([{"tool": "delete", "args": {"id": "x"}}], r"^plan: step 1: 'delete' is a write"),
    (
        [{"tool": "search", "args": {"query": "x", "colour": "red"}}],
        r"^plan: step 1 \(search\): unknown argument 'colour'; allowed: query, project",
    ),
    (
        [{"tool": "search", "args": {"query": "x", "limit": "5"}}],
        r"^plan: step 1 \(search\): limit: '5' is not allowed",
    ),
    (
        [{"tool": "kg_query", "args": {"include_ended": "yes"}}],
        r"^plan: step 1 \(kg_query\): include_ended: 'yes' is not allowed",
    ),
    ([{"tool": "search", "args": {}}], r"^plan: step 1 \(search\): query: required"),
    (
        [{"tool": "search", "args": {"query": "x", "workspace": "other"}}],
        r"^plan: step 1 \(search\): 'workspace' is not allowed",
    ),
    (
        [{"tool": "search", "args": {"query": "x", "max_chars": 9000}}],
        r"^plan: step 1 \(search\): unknown argument 'max_chars'",
    ),
    (
        [
            {"tool": "search", "args": {"query": "x"}},
            {"tool": "search", "args": {"query": "x", "limit": 10}},
        ],
        r"^plan: step 2 repeats step 1",
    ),
    (
        [{"tool": "search", "args": {"query": f"q{i}"}} for i in range(9)],
        r"^plan: 9 steps; at most 8",
    ),
    ('[{"tool": "search"', r"^plan: not valid JSON"),
    ({"tool": "search"}, r"^plan: must be a list of steps"),
    ([{"tool": "search", "args": {"query": "x"}, "then": 2}], r"^plan: step 1: must be an object"),
    ([{"tool": "search", "args": ["x"]}], r"^plan: step 1 \(search\): args must be an object"),
]


@pytest.mark.parametrize(("plan", "message"), BAD_PLANS)
def test_invalid_plans_are_rejected_before_anything_runs(
    rt: Runtime, logged: Path, plan: Any, message: str
) -> None:
    """Each kind of invalid plan is one clear error, and no read reaches a reader (the
    trace holds no reader message from the call)."""
    before = len(reader_messages(logged))
    with pytest.raises(InputError, match=message) as caught:
        recall(rt, "question", plan)
    assert "\n" not in str(caught.value)
    assert len(reader_messages(logged)) == before


def test_a_plan_sent_as_a_json_string_is_accepted(rt: Runtime) -> None:
    """Some clients send the plan as a JSON string; it means the same as the list."""
    plan = [{"tool": "search", "args": {"query": "espresso", "limit": 2}}]
    assert recall(rt, "q", json.dumps(plan)) == recall(rt, "q", plan)


def test_step_models_follow_the_row_functions() -> None:
    """A step's arguments are its row function's argument model: the tool's parameters,
    minus workspace and sizes (search's `detail="chunks"` is its `by_chunk`)."""
    fields = {
        t: set(kind.model_fields["args"].annotation.model_fields)  # type: ignore[union-attr]
        for t, kind in plan_module.STEPS.items()
    }
    assert fields["search"] == {
        *("query", "project", "type", "lang", "layer", "limit", "mode"),
        *("include_superseded", "since", "by_chunk"),
    }
    assert fields["get_memory"] == {"id"}
    assert fields["neighbors"] == {"id", "k"}
    assert fields["file_chunks"] == {"source", "start", "end", "project"}
    assert fields["kg_query"] == {"subject", "predicate", "include_ended", "limit"}
    steps = parse_plan([{"tool": "neighbors", "args": {"id": "abc", "k": 3}}])
    assert steps[0].label() == "neighbors(id='abc', k=3)"


# -- running ---------------------------------------------------------------------------


def test_without_a_plan_recall_is_search_byte_for_byte(rt: Runtime) -> None:
    """No plan: exactly the compact search response for the question, at any budget."""
    reads = ActorReads(rt)
    for question, budget in (("espresso shot", 4000), ("actor mailbox", 1200), ("zzz", 12000)):
        assert recall(rt, question, None, max_chars=budget) == search_text(
            reads, SearchArgs(query=question), max_chars=budget
        )
    assert recall(rt, "espresso", []) == search_text(reads, SearchArgs(query="espresso"))


def test_two_steps_run_at_the_same_time(
    rt: Runtime, logged: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two lexical steps run at the same time: with every lexical query stalled in its
    reader, the trace shows both steps' queries stalled at once."""
    stall(monkeypatch, "lexical_query", 1.5)
    text = recall(
        rt,
        "two parts",
        [
            {"tool": "search", "args": {"query": "espresso", "mode": "lexical"}},
            {"tool": "search", "args": {"query": "tomatoes", "mode": "lexical"}},
        ],
    )
    lines = text.splitlines()
    assert lines[1].startswith("step 1 search(") and lines[1].endswith(": 1 results")
    assert lines[2].startswith("step 2 search(") and lines[2].endswith(": 1 results")
    assert in_flight_at_once(logged, "lexical_query") == 2


class _CountingEmbedder:
    """The session's embedder, handed to the Runtime (its public `embedder=` argument) with
    each inference's texts written down."""

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner
        self.calls: list[list[str]] = []

    def embed(self, texts: Any, **k: Any) -> Any:
        self.calls.append(list(texts))
        return self._inner.embed(texts, **k)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_a_four_search_plan_embeds_its_queries_in_one_inference(
    tmp_path: Path, embedder: Embedder
) -> None:
    """The coordinator embeds every search step's query in ONE batched inference before the
    steps fan out (query cache off): the model is called once, with the 4 texts; a lexical
    search embeds nothing and adds none."""
    config = Config()
    config.embedding.query_cache_size = 0
    counting = _CountingEmbedder(embedder)
    runtime = Runtime(tmp_path / "data", config, embedder=cast(Embedder, counting)).start()
    try:
        ingest_path(runtime, write_tree(tmp_path / "proj", TOPICS), project="proj")
        calls = counting.calls
        calls.clear()  # the ingest's own inferences
        queries = ["espresso shot", "actor mailbox", "tomato sauce", "  garden soil "]
        plan = [{"tool": "search", "args": {"query": q}} for q in queries]
        plan[1]["args"]["mode"] = "semantic"
        plan.append({"tool": "search", "args": {"query": "espresso", "mode": "lexical"}})
        text = recall(runtime, "four parts", plan)
        assert len(re.findall(r"^step \d search\(.*: \d+ results$", text, re.M)) == 5, text
        assert len(calls) == 1, calls
        assert sorted(calls[0]) == sorted(q.strip() for q in queries)
    finally:
        runtime.stop()


def test_a_recalls_search_steps_read_the_vector_store_once_with_the_rows_of_each_alone(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The coordinator asks every search step's vector read as ONE batched read (the trace
    holds one vector_batch of the recall and no vector query of its own): Chroma is queried
    once for the unfiltered steps of one limit (a filtered step as before), and each
    step's rows are exactly those of the same search run alone, unprimed."""
    config = Config()
    config.embedding.query_cache_size = 0
    runtime = Runtime(tmp_path / "data", config, embedder=embedder).start()
    try:
        ingest_path(runtime, write_tree(tmp_path / "proj", TOPICS), project="proj")
        configure_logging(runtime.data_dir, level="error")
        chroma: list[tuple[int, int, bool]] = []  # per Chroma query: n_results, texts, filtered
        real_query = Collection.query

        def counted(self: Collection, *a: Any, **k: Any) -> Any:
            filtered = "metadatas" in k["include"] or k.get("where") is not None
            chroma.append((k["n_results"], len(k["query_embeddings"]), filtered))
            return real_query(self, *a, **k)

        with monkeypatch.context() as patched:
            patched.setattr(Collection, "query", counted)  # chromadb's, not ours
            plan = [
                {"tool": "search", "args": {"query": "espresso shot grind"}},
                {"tool": "search", "args": {"query": "actor mailbox", "mode": "semantic"}},
                {"tool": "search", "args": {"query": "tomato sauce", "limit": 3}},
                {"tool": "search", "args": {"query": "garden soil", "project": "proj"}},
                {"tool": "search", "args": {"query": "espresso", "mode": "lexical"}},
            ]
            steps = parse_plan(plan)
            ws = ActorReads(runtime).open("")
            results = run_plan(ActorReads(runtime), ws, steps, 30, recall_id="batched")
        vector_reads = [
            e["message"]
            for e in reader_messages(runtime.data_dir, recall_id="batched")
            if e["actor"].startswith("VectorReader")
        ]
        assert vector_reads == ["vector_batch"], vector_reads
        # The three unfiltered steps in one Chroma call per limit; the filtered one alone.
        unfiltered = [(n, texts) for n, texts, filtered in chroma if not filtered]
        assert sum(texts for _, texts in unfiltered) == 3, chroma
        assert len({n for n, _ in unfiltered}) == len(unfiltered), chroma
        assert [texts for _, texts, filtered in chroma if filtered] == [1], chroma
        direct = DirectReads(runtime)
        try:
            for step, result in zip(steps, results, strict=True):
                assert result.outcome == "ok", result
                by_itself = step.rows(direct, ws, None)
                assert result.rows == by_itself, step
        finally:
            direct.close()
    finally:
        runtime.stop()


def test_a_recalls_search_steps_read_their_records_in_one_fetch(rt: Runtime, logged: Path) -> None:
    """A recall's search steps are answered together: ONE record fetch in the recall's
    trace, so every step's candidates came from it, and each step's rows are exactly
    those of the same search alone."""
    plan = [
        {"tool": "search", "args": {"query": "espresso shot grind"}},
        {"tool": "search", "args": {"query": "actor mailbox", "mode": "semantic"}},
        {"tool": "kg_query", "args": {"subject": "x"}},
        {"tool": "search", "args": {"query": "tomato sauce", "limit": 3}},
        {"tool": "search", "args": {"query": "espresso", "mode": "lexical"}},
    ]
    steps = parse_plan(plan)
    ws = ActorReads(rt).open("")
    results = run_plan(ActorReads(rt), ws, steps, 30, recall_id="together")
    fetches = reader_messages(logged, recall_id="together", message="fetch_records")
    assert len(fetches) == 1, fetches
    direct = DirectReads(rt)
    try:
        for step, result in zip(steps, results, strict=True):
            assert result.outcome == "ok", result
            if step.tool == "search":
                alone = step.rows(direct, ws, None)
                assert result.rows == alone and alone.hits, step
    finally:
        direct.close()


def test_a_search_step_stuck_on_a_read_times_out_alone(
    rt: Runtime, logged: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Search steps answered together do not wait for one whose read is stuck: the others
    are fetched and answered (their rows those of the search alone), the stuck one (the
    only lexical query, stalled in its reader past the deadline) times out at the recall's
    deadline."""
    plan = [
        {"tool": "search", "args": {"query": "espresso shot grind", "mode": "semantic"}},
        {"tool": "search", "args": {"query": "stuck grind", "mode": "lexical"}},
        {"tool": "search", "args": {"query": "tomato sauce", "limit": 3, "mode": "semantic"}},
    ]
    steps = parse_plan(plan)
    ws = ActorReads(rt).open("")
    stall(monkeypatch, "lexical_query", 4.0)
    results = run_plan(ActorReads(rt), ws, steps, 2.0, recall_id="stuck")
    monkeypatch.delenv("IMPRINT_DELAY")
    assert [r.outcome for r in results] == ["ok", "timeout", "ok"], results
    assert results[1].detail.startswith("search (lexical): no answer within"), results[1]
    direct = DirectReads(rt)
    try:
        for i in (0, 2):
            alone = steps[i].rows(direct, ws, None)
            assert results[i].rows == alone and alone.hits, steps[i]
    finally:
        direct.close()


def test_a_search_step_that_crashes_beside_others_answered_together(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One of the search steps answered together crashes (not an ImprintError): its line
    says so, the searches before and after it still answer, and so does the other step.
    The crash is the second search's rows failing (IMPRINT_FAIL, imprint/_faults.py): the
    steps' rows are made in plan order."""
    monkeypatch.setenv("IMPRINT_FAIL", "search.rows:2")
    text = recall(
        rt,
        "q",
        [
            {"tool": "search", "args": {"query": "espresso shot"}},
            {"tool": "search", "args": {"query": "tomato sauce"}},
            {"tool": "kg_query", "args": {"subject": "x"}},
            {"tool": "search", "args": {"query": "retry backoff"}},
        ],
    )
    lines = text.splitlines()
    assert lines[2] == "step 2 search(query='tomato sauce'): error: failed (RuntimeError)"
    assert lines[1].endswith("results") and lines[4].endswith("results"), lines[:5]
    assert lines[3].startswith("step 3 kg_query(subject='x'): ")
    assert "docs/espresso.md#0" in text and "src/retry.py#0" in text


def test_primed_vector_hits_do_not_outlive_their_recall(rt: Runtime) -> None:
    """Hits primed for a recall are taken by its steps or dropped when it ends: a later
    search of the same query reads the store again and sees a record written since."""
    reads = ActorReads(rt)
    ws = reads.open("")
    cfg = rt.config.search
    queries = [
        planned_vector_query(ws, SearchArgs(query="velvet hammock siesta").resolve(cfg)),
        planned_vector_query(ws, SearchArgs(query="espresso shot").resolve(cfg)),
    ]
    primed = [q for q in queries if q is not None]
    assert len(primed) == 2
    reads.prime_vectors(primed)  # as a recall does; its first step never asks
    reads.drop_primed(primed)  # the recall is over
    store_memory(Writes(rt), "A velvet hammock siesta after lunch.", project="proj")
    rows = search(reads, SearchArgs(query="velvet hammock siesta"), ws)  # the primed query
    top = rows.hits[0]
    assert "velvet hammock" in top.record.content
    assert top.why is not None and top.why.vector_rank == 1  # the vector side saw it too
    # Taken while it lasts: a primed query's hits come from the batch, not a read of its own.
    reads.prime_vectors(primed)
    batch_hits = reads.ask(primed[0]).get(timeout=30)
    assert batch_hits and reads.ask(primed[0]).get(timeout=30) == batch_hits
    reads.drop_primed(primed)


def test_a_step_missing_the_deadline_beside_steps_that_do_not(
    rt: Runtime, logged: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step past the one deadline (its fact read stalled in the reader beyond it)
    reports a timeout; the others return their evidence."""
    stall(monkeypatch, "fact_query", 3.0)
    text = recall(
        rt,
        "q",
        [
            {"tool": "search", "args": {"query": "espresso"}},
            {"tool": "kg_query", "args": {"subject": "x"}},
            {"tool": "file_summary", "args": {"source": "notes.txt"}},
        ],
        timeout_sec=1.0,
    )
    assert any(e.get("point") == "reader.fact_query" for e in events(logged))  # it was stalled
    lines = text.splitlines()
    assert lines[2] == (
        "step 2 kg_query(subject='x'): timeout: no answer within the recall's 1 s deadline"
    )
    assert lines[1].endswith("results") and lines[3].endswith(": summary")
    assert "docs/espresso.md#0" in text and "file:notes.txt" in text


def test_concurrent_recalls_do_not_queue_behind_each_other(
    rt: Runtime, logged: Path, log_watch: LogWatch, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recall whose step is stuck (its fact read stalled in the reader) does not hold up
    another recall started after it."""
    stall(monkeypatch, "fact_query", 6.0)
    slow_result: list[str] = []
    slow = threading.Thread(
        target=lambda: slow_result.append(
            recall(rt, "slow", [{"tool": "kg_query", "args": {"subject": "x"}}], timeout_sec=60)
        )
    )
    slow.start()
    try:
        log_watch.wait_for("fault.delay", point="reader.fact_query")
        fast = recall(rt, "fast", [{"tool": "search", "args": {"query": "espresso"}}])
        assert "docs/espresso.md#0" in fast and not slow_result  # the slow one is still waiting
    finally:
        slow.join(timeout=60)
    assert slow_result and "step 1 kg_query(subject='x'): 0 facts" in slow_result[0]


def test_a_failing_step_beside_working_ones(rt: Runtime) -> None:
    """A step that errors reports its one-line error in its line; the others return."""
    text = recall(
        rt,
        "q",
        [
            {"tool": "get_memory", "args": {"id": "0000000000000000"}},
            {"tool": "file_chunks", "args": {"source": "missing.md"}},
            {"tool": "search", "args": {"query": "retry backoff"}},
        ],
    )
    lines = text.splitlines()
    assert lines[1].startswith("step 1 get_memory(id='0000000000000000'): error: id: no record")
    assert lines[2].startswith("step 2 file_chunks(source='missing.md'): error: source: no source")
    assert lines[3].startswith("step 3 search(query='retry backoff'): ")
    assert "src/retry.py#0" in text


def test_merge_round_robin_keeps_first_place_and_fullest_content() -> None:
    """Items enter by rank across steps in turn; a repeated key keeps the longer text."""

    def result(index: int, *items: tuple[str, str]) -> StepResult:
        return StepResult(
            index=index,
            label=f"s{index}",
            outcome="ok",
            detail="",
            items=tuple(Item(key=k, meta=k, content=c) for k, c in items),
        )

    merged = merge(
        [
            result(1, ("a", "short a"), ("b", "b"), ("c", "c")),
            result(2, ("d", "d"), ("a", "a much longer text for a"), ("e", "e")),
            result(3, ("fact:1", "f")),
        ]
    )
    assert [i.key for i in merged] == ["a", "d", "fact:1", "b", "c", "e"]
    assert merged[0].content == "a much longer text for a"


def test_merging_across_search_memory_chunks_and_neighbors(rt: Runtime) -> None:
    """The same record from search, get_memory, file_chunks and neighbors appears once."""
    reads = ActorReads(rt)
    espresso = ids_in(search_text(reads, SearchArgs(query="purple kangaroo protocol")))[0]
    text = recall(
        rt,
        "espresso",
        [
            {"tool": "search", "args": {"query": "purple kangaroo protocol", "limit": 3}},
            {"tool": "get_memory", "args": {"id": espresso}},
            {"tool": "file_chunks", "args": {"source": "docs/espresso.md"}},
            {"tool": "neighbors", "args": {"id": espresso, "k": 2}},
        ],
        max_chars=12000,
    )
    shown = ids_in(text)
    assert shown.count(espresso) == 1 and shown[0] == espresso
    assert len(shown) == len(set(shown))
    # Round-robin: rank 1 of search (espresso), then neighbours' rank 1 before search's rank 2.
    assert text.splitlines()[0].startswith('recall "espresso": 4 steps')


def test_the_same_path_in_two_projects_stays_two_sources(rt: Runtime, tmp_path: Path) -> None:
    """file_summary and list_sources of one path in two projects merge to two items, not one."""
    ingest_path(
        rt, write_tree(tmp_path / "other", {"notes.txt": "Other checklist."}), project="other"
    )
    text = recall(
        rt,
        "notes",
        [
            {"tool": "file_summary", "args": {"source": "notes.txt", "project": "proj"}},
            {"tool": "file_summary", "args": {"source": "notes.txt", "project": "other"}},
            {"tool": "list_sources", "args": {}},
        ],
        max_chars=12000,
    )
    metas = re.findall(r"^\[\d+\] (file:notes.txt \| \S+) \|", text, re.M)
    assert sorted(metas) == ["file:notes.txt | other", "file:notes.txt | proj"], text


@pytest.mark.parametrize("budget", [1200, 2000, 4000, 8000, 12000])
def test_hard_budgets_count_hidden_results_and_keep_the_minimum_width(
    rt: Runtime, budget: int
) -> None:
    """The response never exceeds max_chars; hidden results are counted; excerpts >= 300."""
    writes = Writes(rt)
    for i in range(30):
        store_memory(writes, f"Memory {i} about heron migration. " + "The herons fly south. " * 40)
    text = recall(
        rt,
        "herons",
        [
            {"tool": "search", "args": {"query": "heron migration", "limit": 50}},
            {
                "tool": "search",
                "args": {"query": "herons fly south", "limit": 50, "mode": "lexical"},
            },
        ],
        max_chars=budget,
    )
    assert len(text) <= budget
    total = int(re.search(r"steps, (\d+) records", text).group(1))  # type: ignore[union-attr]
    shown = ids_in(text)
    assert shown
    hidden = total - len(shown)
    if hidden:
        assert text.splitlines()[-1].startswith(f"({hidden} more result")
    else:
        assert not text.splitlines()[-1].startswith("(")
    # A block's first line is its provenance (`id | project | ...`); index lines have no `|`.
    blocks = [b for b in text.split("\n\n")[1:] if b.startswith("[") and " | " in b[:120]]
    excerpts = [b.split("\n", 1)[1] for b in blocks]
    assert len(blocks) == len(shown)
    listed = re.findall(r"^\[\d+\] (\S+) \d\.\d{4}$", text, re.M)
    assert not set(listed) & set(shown)
    assert len(shown) + len(listed) <= total
    clipped = {len(e) for e in excerpts if e.endswith("…")}
    assert len(clipped) <= 1  # one common width
    assert all(width >= MIN_EXCERPT for width in clipped)
    assert all(len(e) <= max(clipped, default=len(e)) for e in excerpts)


def test_every_step_stays_in_the_recall_workspace(tmp_path: Path, embedder: Embedder) -> None:
    """Steps read only the recall's workspace, whatever ids or sources they name."""
    runtime = Runtime(tmp_path / "data", Config(), embedder=embedder).start()
    try:
        runtime.resolve("alpha", create=True)
        runtime.resolve("beta", create=True)
        ingest_path(runtime, write_tree(tmp_path / "p", TOPICS), project="proj", workspace="alpha")
        writes = Writes(runtime)
        from imprint.writes.facts import edit_facts

        edit_facts(writes, "add", "imprint", "uses", "pykka", workspace="alpha")
        alpha_id = ids_in(
            search_text(ActorReads(runtime), SearchArgs(query="espresso"), workspace="alpha")
        )[0]
        plan = [
            {"tool": "search", "args": {"query": "espresso"}},
            {"tool": "get_memory", "args": {"id": alpha_id}},
            {"tool": "neighbors", "args": {"id": alpha_id}},
            {"tool": "file_chunks", "args": {"source": "docs/espresso.md"}},
            {"tool": "file_summary", "args": {"source": "docs/espresso.md"}},
            {"tool": "list_sources", "args": {}},
            {"tool": "kg_query", "args": {"subject": "imprint"}},
        ]
        beta = recall(runtime, "q", plan, workspace="beta")
        assert ids_in(beta) == []
        assert "0 records" in beta.splitlines()[0]
        alpha = recall(runtime, "q", plan, workspace="alpha")
        assert alpha_id in ids_in(alpha) and "fact:" in alpha
    finally:
        runtime.stop()


def test_recall_is_registered_as_the_seventeenth_read_only_tool(rt: Runtime) -> None:
    """MCP lists 17 tools; recall is read-only with its parameters and a short description."""

    async def go() -> Any:
        async with Client(build_server(rt)) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            result = await client.call_tool(
                "recall",
                {"question": "q", "plan": [{"tool": "search", "args": {"query": "espresso"}}]},
            )
            bad = await client.call_tool("recall", {"question": "q", "plan": [{"tool": "store"}]})
            return tools, result, bad

    tools, result, bad = anyio.run(go)
    assert len(tools) == 17
    spec = tools["recall"]
    assert spec.annotations.read_only_hint is True
    assert set(spec.input_schema["properties"]) == {
        "question",
        "plan",
        "max_chars",
        "condense",
        "workspace",
    }
    assert spec.input_schema["required"] == ["question"]
    assert len(spec.description) < 2048 and '"tool": "kg_query"' in spec.description
    assert not result.is_error and "docs/espresso.md#0" in result.content[0].text
    assert bad.is_error and bad.content[0].text.startswith("plan: step 1: 'store' is a write")
