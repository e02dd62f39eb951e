"""Per-tool latency for `benchmark.scale`, at its first size: every read-only tool the server
registers, called through ONE real MCP session (the in-memory `mcp.client.Client` against
`build_server`, the tests' way in), `calls` times each after warm-up, with arguments drawn
from the store.

Arguments: queries are the run's own (the first words of corpus sentences); record ids,
sources and projects come from the hits of those queries (the reader actors, untimed); fact
subjects from the store's facts, which `kg_edit` writes through the same session first when
the store has none (a fact per project and relation; objects are query phrases, sources real
ones). recall runs a 3-step plan (a search, a lexical search, a file's summary); graph_scope
walks root, a project, a source and a chunk in turn; list_sources alternates all and one
project. The calls go round-robin over the tools in a seeded random order per round, so a
change in the machine's load falls on every tool alike. A call that answers with an error
stops the run: an error is not a latency.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from mcp.client import Client

from benchmark._common import latency, note
from imprint.actors.lifecycle import Runtime
from imprint.reads.gateway import ActorReads
from imprint.reads.search import SearchArgs, search
from imprint.server import build_server

__all__ = ["FACT_PREDICATES", "SERIES", "ToolArgs", "draw_args", "measure_tools", "plot_tools"]

WARMUP_CALLS = 2
FACT_PREDICATES = ("uses", "decided", "depends on", "owned by")
SEED = 20261201

Args = dict[str, Any]


@dataclass
class ToolArgs:
    """What the calls' arguments are drawn from: all of it found in the store."""

    queries: list[str]
    hits: list[tuple[str, str, str]]  # (record id, source, project) from search hits
    subjects: list[str]  # subjects of the store's facts


def _search(mode: str) -> Callable[[ToolArgs, int], Args]:
    return lambda a, i: {"query": a.queries[i % len(a.queries)], "mode": mode}


def _hit(a: ToolArgs, i: int) -> tuple[str, str, str]:
    return a.hits[(i * 7) % len(a.hits)]  # spread over the hits of different queries


def _recall(a: ToolArgs, i: int) -> Args:
    first, second = a.queries[i % len(a.queries)], a.queries[(i + 1) % len(a.queries)]
    _, source, project = _hit(a, i)
    plan = [
        {"tool": "search", "args": {"query": first}},
        {"tool": "search", "args": {"query": second, "mode": "lexical"}},
        {"tool": "file_summary", "args": {"source": source, "project": project}},
    ]
    return {"question": f"{first}? {second}?", "plan": plan}


def _graph(a: ToolArgs, i: int) -> Args:
    rid, source, project = _hit(a, i)
    return {"scope": ("root", f"project:{project}", f"source:{source}", f"chunk:{rid}")[i % 4]}


def _sources(a: ToolArgs, i: int) -> Args:
    return {} if i % 2 == 0 else {"project": _hit(a, i)[2]}


# Series name -> (tool, the i-th call's arguments). Search is one series per mode.
SERIES: dict[str, tuple[str, Callable[[ToolArgs, int], Args]]] = {
    "search hybrid": ("search", _search("hybrid")),
    "search semantic": ("search", _search("semantic")),
    "search lexical": ("search", _search("lexical")),
    "recall": ("recall", _recall),
    "get_memory": ("get_memory", lambda a, i: {"id": _hit(a, i)[0]}),
    "neighbors": ("neighbors", lambda a, i: {"id": _hit(a, i)[0]}),
    "file_summary": (
        "file_summary",
        lambda a, i: {"source": _hit(a, i)[1], "project": _hit(a, i)[2]},
    ),
    "file_chunks": (
        "file_chunks",
        lambda a, i: {"source": _hit(a, i)[1], "project": _hit(a, i)[2]},
    ),
    "list_sources": ("list_sources", _sources),
    "kg_query": ("kg_query", lambda a, i: {"subject": a.subjects[i % len(a.subjects)]}),
    "graph_scope": ("graph_scope", _graph),
    "status": ("status", lambda a, i: {}),
    "device_context": ("device_context", lambda a, i: {}),
}


def draw_args(runtime: Runtime, queries: list[str]) -> ToolArgs:
    """Ids, sources and projects from the hits of the run's queries (read, untimed)."""
    reads = ActorReads(runtime)
    hits: dict[str, tuple[str, str, str]] = {}
    for query in queries:
        for hit in search(reads, SearchArgs(query=query, mode="hybrid")).hits[:5]:
            r = hit.record
            hits.setdefault(r.id, (r.id, r.source, r.project))
    if not hits:
        raise SystemExit("per-tool latency: the run's queries found no records in the store")
    return ToolArgs(queries=list(queries), hits=list(hits.values()), subjects=[])


class _Refused(Exception):
    """Raised inside the session, turned into SystemExit once it has closed (raised inside,
    the SDK's task group would wrap it in an exception group)."""


class _Session:
    def __init__(self, client: Any) -> None:
        self.client = client

    async def call(self, tool: str, args: Args) -> str:
        result = await self.client.call_tool(tool, args)
        text = "".join(getattr(part, "text", "") for part in result.content)
        if result.is_error:
            raise _Refused(f"{tool}({args}) answered an error: {text[:300]}")
        return text

    async def subjects(self, args: ToolArgs) -> list[str]:
        """The subjects of the store's current facts; a few facts written first if none."""
        listed = await self.call("kg_query", {"limit": 200})
        if listed.startswith("no facts"):
            projects = sorted({p for _, _, p in args.hits})
            for k, project in enumerate(projects):
                for j, predicate in enumerate(FACT_PREDICATES):
                    _, source, _ = args.hits[(k * len(FACT_PREDICATES) + j) % len(args.hits)]
                    fact = {"subject": project, "predicate": predicate, "source": source}
                    fact["object"] = args.queries[(k + j) % len(args.queries)]
                    await self.call("kg_edit", {"action": "add", **fact})
            listed = await self.call("kg_query", {"limit": 200})
        found = [line.split(" | ")[1] for line in listed.splitlines() if line.startswith("fact:")]
        return list(dict.fromkeys(found))


def read_only_tools(tools: Any) -> set[str]:
    return {t.name for t in tools if t.annotations is not None and t.annotations.read_only_hint}


async def _measure(runtime: Runtime, args: ToolArgs, calls: int) -> dict[str, list[float]] | str:
    """The samples of each series, or why the run stopped."""
    async with Client(build_server(runtime)) as client:
        try:
            return await _timed(_Session(client), args, calls)
        except _Refused as refused:
            return str(refused)


async def _timed(session: _Session, args: ToolArgs, calls: int) -> dict[str, list[float]]:
    listed = await session.client.list_tools()
    missing = read_only_tools(listed.tools) - {tool for tool, _ in SERIES.values()}
    if missing:
        raise _Refused(f"no arguments for {', '.join(sorted(missing))}")
    args.subjects = await session.subjects(args)
    names = list(SERIES)
    for i in range(WARMUP_CALLS):
        for name in names:
            tool, make = SERIES[name]
            await session.call(tool, make(args, calls + i))
    rng = np.random.default_rng(SEED)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for i in range(calls):
        for k in rng.permutation(len(names)):
            tool, make = SERIES[names[k]]
            call_args = make(args, i)
            started = time.perf_counter()
            await session.call(tool, call_args)
            samples[names[k]].append(time.perf_counter() - started)
    return samples


def measure_tools(runtime: Runtime, queries: list[str], calls: int, records: int) -> dict[str, Any]:
    """`calls` timed calls of each series through one MCP session; figures and samples."""
    args = draw_args(runtime, queries)
    samples = anyio.run(_measure, runtime, args, calls)
    if isinstance(samples, str):
        raise SystemExit(f"per-tool latency: {samples}")
    figures = {name: asdict(latency(s)) for name, s in samples.items()}
    shown = ", ".join(f"{n} {f['p50_ms']:.1f}" for n, f in figures.items())
    note(f"  {records}: per tool p50 ms: {shown}")
    return {
        "records": records,
        "calls": calls,
        "warmup_calls": WARMUP_CALLS,
        "loadavg": list(os.getloadavg()),
        "latency": figures,
        "samples_ms": {n: [round(x * 1000, 2) for x in s] for n, s in samples.items()},
    }


def table_tools(tools: dict[str, Any]) -> list[str]:
    lines = [
        f"per tool through one MCP session at {tools['records']} records "
        f"({tools['calls']} calls each after {tools['warmup_calls']} warm-up; "
        f"load {tools['loadavg'][0]:.1f}):",
        f"  {'tool':<16} {'p50 ms':>7} {'p95 ms':>7}",
    ]
    for name, fig in tools["latency"].items():
        lines.append(f"  {name:<16} {fig['p50_ms']:>7.1f} {fig['p95_ms']:>7.1f}")
    return lines


def plot_tools(tools: dict[str, Any], folder: Path) -> str:
    """A box per tool (whiskers at p5/p95), log-scale ms; the file's name."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FormatStrFormatter, LogLocator

    names = list(tools["samples_ms"])
    fig, ax = plt.subplots(figsize=(8.5, 4.2))
    ax.boxplot([tools["samples_ms"][n] for n in names], tick_labels=names, whis=(5, 95))
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.yaxis.set_minor_locator(LogLocator(subs=(2.0, 5.0)))
    ax.yaxis.set_minor_formatter(FormatStrFormatter("%g"))
    ax.tick_params(axis="y", which="both", labelsize=7)
    ax.tick_params(axis="x", labelrotation=40, labelsize=8)
    for label in ax.get_xticklabels():
        label.set_horizontalalignment("right")
    ax.set_ylabel("ms per call (log)")
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.set_title(
        f"Read tools through one MCP session, {tools['records']:,} records "
        f"({tools['calls']} calls each; load average {tools['loadavg'][0]:.1f})",
        fontsize=10,
    )
    fig.tight_layout()
    name = "tool_latency.png"
    fig.savefig(folder / name, dpi=110)
    plt.close(fig)
    return name
