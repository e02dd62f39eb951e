"""Load: 8 MCP clients at once (4 stdio bridges to the shared owner, 4 streamable HTTP) for
a fixed time, each sending a realistic mix of calls; throughput, latency per tool, errors.

    .venv/bin/python -m benchmark.load [--seconds 60] [--stdio 4] [--http 4]
                                       [--corpus ../shared/corpus/pykka] [--out FOLDER]

Method. A fresh data dir ingests the corpus folder (project `load`) in-process; then one
`imprint serve --http` owns the data dir and serves both transports: the stdio clients run
`imprint serve`, which bridges to its Unix socket, and the HTTP clients send its bearer
token. Each client holds ONE session and, until the time is up, picks each call at random
(seeded per client): search 60%, recall 20% (half with a 2-3 step plan), store 10%,
get_memory 5% and file_chunks 5% (ids and sources taken from earlier search answers).
Latency is timed around each call on the client; an error result or an exception is an
error (there must be none). The machine may be shared: read every figure beside the load
average (start and end). The published run holds `results.json` and `README.md`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import re
import sys
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from benchmark._common import (
    DEFAULT_CORPUS,
    PUBLISHED,
    Run,
    conclude,
    corpus_dir,
    data_dir,
    imprint_revision,
    machine,
    note,
    serving_http,
    title,
    utc_now,
)

QUERIES = [
    "how does an actor stop",
    "ThreadingActor mailbox",
    "future get timeout",
    "proxy method call",
    "actor registry broadcast",
    "on_start on_stop hooks",
    "exception in an actor",
    "ask versus tell",
    "eventlet and gevent actors",
    "typed proxies",
    "pykka debug logging",
    "actor ref is_alive",
    "stop all actors at exit",
    "deadlock when an actor asks itself",
    "traversable attributes",
]
KINDS = ("search", "recall", "store", "get_memory", "file_chunks")
WEIGHTS = (60, 20, 10, 5, 5)
_ID = re.compile(r"^\[\d+\] ([0-9a-f]{16}) \| [^|]+ \| ([^|#]+)#\d+[^|]* \|", re.MULTILINE)


@dataclass
class ToolFigures:
    calls: int
    errors: int
    p50_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float


@dataclass
class LoadRun(Run):
    revision: dict[str, Any]
    corpus: str
    records: int = 0
    seconds: float = 0.0
    clients: dict[str, int] = field(default_factory=dict)
    calls: int = 0
    errors: int = 0
    throughput_per_s: float = 0.0
    per_tool: dict[str, ToolFigures] = field(default_factory=dict)
    per_transport: dict[str, dict[str, float]] = field(default_factory=dict)
    error_samples: list[str] = field(default_factory=list)


@dataclass
class Sample:
    transport: str
    tool: str
    seconds: float
    error: str = ""


@contextlib.contextmanager
def http_owner(root: Path, cwd: Path) -> Iterator[str]:
    """`imprint serve --http` owning `root` (both transports), stderr to a file."""
    env = {**os.environ, "IMPRINT_DATA_DIR": str(root)}
    with serving_http(env, cwd, root / "serve-http.stderr") as (_proc, port):
        yield f"http://127.0.0.1:{port}/mcp"


@contextlib.asynccontextmanager
async def open_client(
    transport: str, n: int, root: Path, cwd: Path, url: str
) -> AsyncIterator[Any]:
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters

    if transport == "stdio":
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "imprint.cli", "serve"],
            env={**os.environ, "IMPRINT_DATA_DIR": str(root)},
            cwd=str(cwd),
        )
        with (root / f"bridge-{n}.stderr").open("w") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                yield client
        return
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    token = (root / "http_token").read_text().strip()
    async with (
        create_mcp_http_client({"Authorization": f"Bearer {token}"}) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


def _call(kind: str, rng: random.Random, seen: list[tuple[str, str]], n: int) -> tuple[str, Any]:
    query = rng.choice(QUERIES)
    if kind == "search":
        return "search", {"query": query, "limit": rng.choice([5, 10, 20])}
    if kind == "recall":
        args: dict[str, Any] = {"question": query}
        if rng.random() < 0.5:
            steps = [{"tool": "search", "args": {"query": q}} for q in rng.sample(QUERIES, 2)]
            if seen and rng.random() < 0.5:
                steps.append({"tool": "file_summary", "args": {"source": rng.choice(seen)[1]}})
            args["plan"] = steps
        return "recall", args
    if kind == "store":
        return "store", {"content": f"load note {n}: {query} (client note {rng.random():.6f})"}
    if not seen:
        return "search", {"query": query}
    rid, source = rng.choice(seen)
    if kind == "get_memory":
        return "get_memory", {"id": rid}
    return "file_chunks", {"source": source, "start": 0, "end": 2}


@dataclass
class Start:
    """Every client connects first; the last to connect starts the clock for all."""

    clients: int
    seconds: float
    connected: int = 0
    end: float = 0.0
    gate: anyio.Event = field(default_factory=anyio.Event)

    async def arrive(self) -> float:
        self.connected += 1
        if self.connected == self.clients:
            self.end = time.monotonic() + self.seconds
            self.gate.set()
        await self.gate.wait()
        return self.end


async def client_loop(
    transport: str,
    n: int,
    root: Path,
    cwd: Path,
    url: str,
    start: Start,
    samples: list[Sample],
) -> None:
    rng = random.Random(1000 + n)
    seen: list[tuple[str, str]] = []
    async with open_client(transport, n, root, cwd, url) as client:
        end = await start.arrive()
        i = 0
        while time.monotonic() < end:
            kind = rng.choices(KINDS, WEIGHTS)[0]
            tool, args = _call(kind, rng, seen, n * 1_000_000 + i)
            i += 1
            t0 = time.perf_counter()
            error = ""
            try:
                with anyio.fail_after(120):
                    result = await client.call_tool(tool, args)
                text = "\n".join(getattr(p, "text", "") for p in result.content)
                if result.is_error:
                    error = text[:200]
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"[:200]
                text = ""
            samples.append(Sample(transport, tool, time.perf_counter() - t0, error))
            if tool == "search" and not error:
                seen.extend((m.group(1), m.group(2).strip()) for m in _ID.finditer(text))
                del seen[:-200]


def figures(samples: Sequence[Sample]) -> ToolFigures:
    ms = np.asarray([s.seconds for s in samples], dtype=np.float64) * 1000.0
    return ToolFigures(
        calls=len(samples),
        errors=sum(1 for s in samples if s.error),
        p50_ms=round(float(np.percentile(ms, 50)), 1),
        p95_ms=round(float(np.percentile(ms, 95)), 1),
        p99_ms=round(float(np.percentile(ms, 99)), 1),
        max_ms=round(float(ms.max()), 1),
    )


def run(args: argparse.Namespace, res: LoadRun, root: Path, corpus: Path) -> None:
    from imprint.actors.lifecycle import Runtime
    from imprint.config import load_config
    from imprint.writes.files import ingest_path

    note(f"ingest {corpus}")
    runtime = Runtime(root, load_config(root)).start()
    try:
        report = ingest_path(runtime, corpus, project="load", roots=[corpus])
        res.records = report.chunks
    finally:
        runtime.stop()
    cwd = root / "cwd"
    cwd.mkdir()
    samples: list[Sample] = []
    with http_owner(root, cwd) as url:
        note(f"{args.stdio} stdio + {args.http} HTTP clients for {args.seconds:g} s")
        clients = [("stdio", i) for i in range(args.stdio)] + [
            ("http", args.stdio + i) for i in range(args.http)
        ]

        async def main() -> None:
            start = Start(clients=len(clients), seconds=args.seconds)
            async with anyio.create_task_group() as tg:
                for transport, n in clients:
                    tg.start_soon(client_loop, transport, n, root, cwd, url, start, samples)

        anyio.run(main)
    res.seconds = args.seconds
    res.calls = len(samples)
    res.errors = sum(1 for s in samples if s.error)
    res.throughput_per_s = round(res.calls / args.seconds, 1)
    for tool in sorted({s.tool for s in samples}):
        res.per_tool[tool] = figures([s for s in samples if s.tool == tool])
    for transport in ("stdio", "http"):
        mine = [s for s in samples if s.transport == transport]
        if mine:
            f = figures(mine)
            res.per_transport[transport] = {
                "calls": f.calls,
                "per_s": round(f.calls / args.seconds, 1),
                "p50_ms": f.p50_ms,
                "p99_ms": f.p99_ms,
                "errors": f.errors,
            }
    res.error_samples = sorted({f"{s.tool}: {s.error}" for s in samples if s.error})[:20]


def table(res: LoadRun) -> str:
    lines = [
        title(res, "load", f", {res.records} chunks, {res.seconds:g} s"),
        f"clients: {res.clients}; calls {res.calls}, errors {res.errors}, "
        f"throughput {res.throughput_per_s} calls/s; load average "
        f"{res.machine['loadavg_start'][0]:.2f} -> {res.machine['loadavg_end'][0]:.2f}",
        f"{'tool':<12} {'calls':>6} {'errors':>6} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}"
        f" {'max ms':>8}",
    ]
    for tool, f in res.per_tool.items():
        lines.append(
            f"{tool:<12} {f.calls:>6} {f.errors:>6} {f.p50_ms:>8} {f.p95_ms:>8} {f.p99_ms:>8}"
            f" {f.max_ms:>8}"
        )
    for transport, t in res.per_transport.items():
        lines.append(f"{transport}: {t}")
    lines.extend(f"error: {e}" for e in res.error_samples)
    return "\n".join(lines)


def readme(res: LoadRun, command: str) -> str:
    doc = (__doc__ or "").split("\n\nMethod. ", 1)[1]
    return "\n".join(
        [
            f"# Load: {sum(res.clients.values())} MCP clients for {res.seconds:g} s",
            "",
            f"Run at {res.started_at} on commit `{res.revision['commit'][:12]}`"
            + (" (imprint/ modified)" if res.revision["imprint_changes"] else "")
            + f", corpus `{res.corpus}`.",
            "",
            f"    {command}",
            "",
            "Method. " + doc.strip(),
            "",
            "```",
            table(res),
            "```",
            "",
        ]
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="measured time (60)")
    parser.add_argument("--stdio", type=int, default=4, help="stdio clients (4)")
    parser.add_argument("--http", type=int, default=4, help="HTTP clients (4)")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS / "pykka")
    parser.add_argument("--data-dir", type=Path, default=None, metavar="PATH")
    parser.add_argument("--out", type=Path, default=PUBLISHED)
    parser.add_argument("--no-publish", action="store_true", help="print the table only")
    args = parser.parse_args(argv)
    if not 1 <= args.seconds <= 3600:
        parser.error("--seconds: must be 1 to 3600")
    if not (0 <= args.stdio <= 32 and 0 <= args.http <= 32 and args.stdio + args.http >= 1):
        parser.error("--stdio, --http: 0 to 32 each, at least one client in all")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    corpus = corpus_dir(args.corpus, "load")
    if corpus is None:
        return 2
    res = LoadRun(
        started_at=utc_now(),
        command=list(sys.argv),
        machine=machine(["mcp", "chromadb", "anyio"]),
        config={"seconds": args.seconds, "stdio": args.stdio, "http": args.http},
        revision=imprint_revision(),
        corpus=str(corpus.name),
        clients={"stdio": args.stdio, "http": args.http},
    )
    with data_dir(args.data_dir, "imprint-load-") as root:
        run(args, res, root, corpus)
    conclude(res, table, None if args.no_publish else readme, args.out, "load")
    return 1 if res.errors else 0


if __name__ == "__main__":
    sys.exit(main())
