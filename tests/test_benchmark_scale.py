"""benchmark/scale.py: its sizes (up to 1M), and a store kept in --data-dir that a later run
measures again without rebuilding it (a 1M store takes most of an hour to build here)."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import anyio
import pytest
from mcp.client import Client

from benchmark import _scale_tools, scale
from benchmark.store import parse_sizes
from imprint.actors.lifecycle import Runtime
from imprint.config import Config
from imprint.server import build_server
from imprint.store.sqlite_read import SqliteReader
from imprint.store.sqlite_write import SqliteWriter
from tests.conftest import write_tree


def test_sizes_take_k_and_m_suffixes() -> None:
    assert parse_sizes("10k,100k,1M") == [10_000, 100_000, 1_000_000]
    assert parse_sizes("2.5k, 500") == [500, 2_500]


@pytest.mark.parametrize("raw", ["1x", "m", "0", "-1k"])
def test_a_bad_size_is_refused_naming_the_argument(raw: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=r"^--sizes: .* is not a positive count"):
        parse_sizes(raw)


def test_a_folder_holding_another_or_an_unfinished_store_is_refused(tmp_path: Path) -> None:
    """Neither measured as if it were the size asked for, nor overwritten."""
    assert scale.built_before(tmp_path / "none", 100) is None
    unfinished = tmp_path / "unfinished"
    (unfinished / "workspaces").mkdir(parents=True)
    with pytest.raises(SystemExit, match="unfinished store; remove it to rebuild"):
        scale.built_before(unfinished, 100)
    other = tmp_path / "other"
    other.mkdir()
    (other / scale.BUILT).write_text(json.dumps({"records": 50}), encoding="utf-8")
    with pytest.raises(SystemExit, match="holds a store of 50, not 100"):
        scale.built_before(other, 100)


PROSE = (
    "An actor handles one message at a time from its mailbox. "
    "Stopping an actor drains the messages that wait in its mailbox first. "
    "A supervisor restarts a child actor that failed with an exception. "
    "The registry keeps a reference to every actor that is still running. "
    "Futures carry the reply of an ask back to the caller that waits for it. "
    "A proxy turns attribute access on an actor into messages to that actor. "
    "Threads run the actors, so a blocking call holds one thread of the pool. "
    "Each message of the benchmark is written through the writer actor in batches. "
    "The lexical index ranks the records that hold the rarer words of a query. "
    "The vector index finds the nearest records to the embedding of a query.\n"
)


@pytest.mark.timeout(300)
def test_a_kept_store_is_measured_again_without_rebuilding(tmp_path: Path) -> None:
    """The first run builds 300 records and records the build; the second finds that record,
    checks the store holds exactly those records, and measures it without writing."""
    corpus = write_tree(tmp_path / "corpus", {"docs/actors.md": PROSE})
    job = scale.SizeJob(tmp_path / "data" / "300", 300, corpus, 100, 8, compare=False)
    first = scale.run_size(job)
    assert not first.size.reused
    assert first.size.check["records"] == first.size.check["vectors"] == 300
    built = json.loads((job.folder / scale.BUILT).read_text(encoding="utf-8"))
    assert built["records"] == 300
    assert built["build_seconds"] == first.size.build_seconds
    mtime = (job.folder / scale.BUILT).stat().st_mtime_ns
    second = scale.run_size(job)
    assert second.size.reused
    assert second.size.records == 300
    assert second.size.build_seconds == first.size.build_seconds
    assert (job.folder / scale.BUILT).stat().st_mtime_ns == mtime
    assert second.size.hybrid.p50_ms > 0
    with pytest.raises(SystemExit, match="holds a store of 300, not 400"):
        scale.run_size(scale.SizeJob(job.folder, 400, corpus, 100, 8, compare=False))


def _size(records: int, store: str) -> scale.SizeRun:
    lat = scale.latency([0.004, 0.005, 0.009])
    return scale.SizeRun(
        records=records,
        build_seconds=2.0,
        write_records_per_sec=records / 2.0,
        check={"records": records},
        disk_mb=1.5,
        rss_mb=300.0,
        peak_rss_mb=310.0,
        hybrid=lat,
        semantic=lat,
        lexical=lat,
        lexical_every_word=lat,
        hybrid_every_word=lat,
        hybrid_project_filter=lat,
        recall_4_searches=lat,
        searches_4_in_sequence=lat,
        fanout_ratio_p50=1.0,
        loadavg=[1.0, 1.0, 1.0],
        store=store,
        samples_ms={
            k: [4.0, 5.0, 9.0]
            for k in (
                *("hybrid", "semantic", "lexical", "hybrid_project_filter"),
                *("recall_4_searches", "searches_4_in_sequence"),
            )
        },
    )


def test_a_published_run_is_drawn_again_from_its_results(tmp_path: Path) -> None:
    """--replot reads results.json back into the same dataclasses and draws every plot
    (latency by size, the distribution per mode, fan-out, memory) into the README."""
    res = scale.Results(
        started_at="2026-11-30T12:00:00Z",
        command=["-m", "benchmark.scale", "--sizes", "1k,2k", "--server-sizes", "1k"],
        machine={"cpus": 2, "loadavg_start": [1.0] * 3, "loadavg_end": [1.0] * 3},
        config={},
        sentences={"count": 10},
        sizes=[_size(1000, "embedded"), _size(2000, "embedded"), _size(1000, "server")],
        actors_vs_direct={
            "records": 1000,
            "actors": {"p50_ms": 5.0},
            "direct": {"p50_ms": 5.0},
            "actors_over_direct_p50": 1.0,
        },
    )
    folder = scale.common.publish(res, tmp_path, "scale", "")
    assert scale.load_results(folder) == res
    assert scale.main(["--replot", str(folder)]) == 0
    made = {"latency_vs_size.png", "latency_distribution.png", "concurrency.png"}
    made.add("memory_disk.png")
    assert made <= {p.name for p in folder.glob("*.png")}
    text = (folder / "README.md").read_text(encoding="utf-8")
    assert all(f"![{name}]({name})" in text for name in made)
    assert "  server     1000" in text


@pytest.mark.timeout(300)
def test_every_read_tool_is_timed_through_an_mcp_session(tmp_path: Path) -> None:
    """At the first size each read-only tool the server registers (search once per mode) is
    called through one MCP session with arguments from the store, none answering an error;
    its figures go into the table, results.json and a box plot."""
    corpus = write_tree(tmp_path / "corpus", {"docs/actors.md": PROSE})
    job = scale.SizeJob(tmp_path / "data" / "200", 200, corpus, 100, 8, compare=False)
    job.tool_calls = 3
    done = scale.run_size(job)
    tools = done.tools
    assert tools is not None and tools["records"] == 200 and tools["calls"] == 3

    async def listed() -> set[str]:
        runtime = Runtime(tmp_path / "empty", Config(), reindex=False)
        async with Client(build_server(runtime.start())) as client:
            names = _scale_tools.read_only_tools((await client.list_tools()).tools)
        runtime.stop()
        return names

    read_only = anyio.run(listed)
    assert {"search", "recall", "get_memory", "kg_query", "status"} <= read_only
    measured = {tool for tool, _ in _scale_tools.SERIES.values()}
    assert read_only == measured
    modes = {f"search {m}" for m in ("hybrid", "semantic", "lexical")}
    assert modes | (read_only - {"search"}) == set(tools["latency"]) == set(tools["samples_ms"])
    assert all(len(s) == 3 and min(s) > 0 for s in tools["samples_ms"].values())
    assert all(f["p95_ms"] >= f["p50_ms"] > 0 for f in tools["latency"].values())
    # The facts kg_query reads were written through kg_edit: one per project and relation.
    store = SqliteReader(job.folder / "workspaces" / "default" / "imprint.sqlite3")
    facts = store.counts()["facts"]
    store.close()
    assert facts > 0 and facts % len(_scale_tools.FACT_PREDICATES) == 0

    res = scale.Results(
        started_at="2026-11-30T12:00:00Z",
        command=["-m", "benchmark.scale", "--sizes", "200"],
        machine={"cpus": 2, "loadavg_start": [1.0] * 3, "loadavg_end": [1.0] * 3},
        config={},
        sentences=done.sentences,
        sizes=[done.size],
        tools=tools,
    )
    folder = scale.common.publish(res, tmp_path / "published", "scale", "")
    assert scale.load_results(folder) == res
    scale.write_figures(res, folder)
    assert (folder / "tool_latency.png").stat().st_size > 0
    text = (folder / "README.md").read_text(encoding="utf-8")
    assert "![tool_latency.png](tool_latency.png)" in text
    for name, fig in tools["latency"].items():
        assert re.search(
            rf"^  {re.escape(name)} +{fig['p50_ms']:.1f} +{fig['p95_ms']:.1f}$", text, re.M
        )


def test_a_read_tool_without_arguments_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only tool the benchmark has no arguments for stops the run, naming the tool,
    rather than leaving it out of the figures unseen."""
    monkeypatch.delitem(_scale_tools.SERIES, "neighbors")
    corpus = write_tree(tmp_path / "corpus", {"docs/actors.md": PROSE})
    job = scale.SizeJob(tmp_path / "data" / "100", 100, corpus, 100, 8, compare=False)
    job.tool_calls = 1
    with pytest.raises(SystemExit, match=r"^per-tool latency: no arguments for neighbors$"):
        scale.run_size(job)


@pytest.mark.timeout(300)
def test_a_kept_store_of_an_older_text_format_is_measured_as_it_was_built(tmp_path: Path) -> None:
    """A kept store whose index is older than this version's text format is not re-indexed
    while it is measured: that would re-embed its chunks with the model (replacing the
    benchmark's vectors) and write while the searches are timed."""
    corpus = write_tree(tmp_path / "corpus", {"docs/actors.md": PROSE})
    job = scale.SizeJob(tmp_path / "data" / "100", 100, corpus, 100, 8, compare=False)
    scale.run_size(job)
    path = job.folder / "workspaces" / "default" / "imprint.sqlite3"
    store = SqliteWriter(path)
    store.set_meta("text_format", "1")  # as the stores kept before the text format existed
    store.close()
    assert scale.run_size(job).size.reused
    store = SqliteReader(path)
    rewritten = store.conn.execute("SELECT count(*) FROM records WHERE context != ''").fetchone()
    assert (store.text_format(), rewritten[0]) == (1, 0)
    store.close()
