"""Memory: peak RSS of `imprint ingest` over a copy of the corpus, and an owner's RSS after
100 and after 1,000 mixed tool calls.

    python -m benchmark.memory [--corpus ../shared/corpus] [--files N] [--calls 1000]

1. Ingest: the corpus (or `--files` of it, spread evenly) is copied to a temporary folder and
   ingested by `python -m imprint.cli ingest` into a fresh data dir, as a user runs it; the
   child's peak RSS (`getrusage(RUSAGE_CHILDREN)`), its chunks and chunks/s are reported.
2. Calls: the same data dir opened by a Runtime in this process (what the daemon owns) and an
   MCP server over it, driven through an in-memory MCP client: search in three modes with
   distinct queries, get_memory, file_chunks, list_sources, status and a 4-step recall, in
   turn. RSS is read after call 100 and after the last; their ratio is the growth.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmark._common import DEFAULT_CORPUS, note
from benchmark.store import corpus_files, limited_copy


def rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def ingest(corpus: Path, work: Path, data: Path) -> dict[str, Any]:
    env = {**os.environ, "IMPRINT_DATA_DIR": str(data), "IMPRINT_LOG_FILE": "false"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "imprint.cli", "ingest", str(corpus), "--project", "corpus"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=work,
    )
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    line = done.stdout.strip().splitlines()[-1]
    chunks = int(line.split("(")[1].split()[0])
    return {
        "summary": line,
        "chunks": chunks,
        "seconds": round(seconds, 1),
        "chunks_per_sec": round(chunks / seconds, 2),
        "peak_rss_mb": round(max(peak, before) / 1024),
        "loadavg": os.getloadavg(),
    }


def calls(data: Path, count: int) -> dict[str, Any]:
    import anyio
    from mcp.client import Client

    from imprint.actors.lifecycle import Runtime
    from imprint.config import load_config
    from imprint.server import build_server

    runtime = Runtime(data, load_config(data)).start()
    words = "actor proxy future message stop logging context server tool stream test config "
    words += "extension event queue thread mopidy pykka structlog schema request transport"
    vocab = words.split()
    marks: dict[int, float] = {}

    async def go() -> None:
        async with Client(build_server(runtime, data)) as client:
            first = await client.call_tool("search", {"query": "actor", "limit": 5})
            text = str(first.content[0].text)  # type: ignore[union-attr]
            rid = text.split("[1] ", 1)[1].split(" ", 1)[0] if "[1] " in text else "x"
            for n in range(1, count + 1):
                size = len(vocab)
                a, b, c = vocab[n % size], vocab[(n * 7) % size], vocab[(n * 13) % size]
                query = f"{a} {b} {c} {n}"
                kind = n % 8
                if kind < 3:
                    mode = ("hybrid", "semantic", "lexical")[kind]
                    await client.call_tool("search", {"query": query, "mode": mode})
                elif kind == 3:
                    await client.call_tool("get_memory", {"id": rid})
                elif kind == 4:
                    await client.call_tool("list_sources", {"limit": 20})
                elif kind == 5:
                    await client.call_tool("status", {})
                elif kind == 6:
                    plan = [{"tool": "search", "args": {"query": f"{query} {i}"}} for i in range(4)]
                    await client.call_tool("recall", {"question": query, "plan": plan})
                else:
                    await client.call_tool("neighbors", {"id": rid, "k": 5})
                if n in (100, count) or n % 250 == 0:
                    marks[n] = rss_mb()
                    note(f"calls: {n}: RSS {marks[n]:.0f} MB")

    try:
        anyio.run(go)
    finally:
        runtime.stop()
    return {
        "rss_mb": {str(k): round(v) for k, v in marks.items()},
        "after_last_over_after_100": round(marks[count] / marks[100], 3),
        "loadavg": os.getloadavg(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--files", type=int, default=0, help="only this many files (0: all)")
    parser.add_argument("--calls", type=int, default=1000, help="mixed calls, 100-5000")
    parser.add_argument(
        "--calls-only",
        type=Path,
        default=None,
        metavar="DATA_DIR",
        help="no ingest: the calls on a copy of this data dir (one with a corpus ingested)",
    )
    args = parser.parse_args()
    if not 100 <= args.calls <= 5000:
        parser.error("--calls: 100-5000")
    if args.calls_only is not None:
        work = Path(tempfile.mkdtemp(prefix="imprint-memory-"))
        try:
            shutil.copytree(args.calls_only, work / "data")
            print(f"calls: {calls(work / 'data', args.calls)}")
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return 0
    work = Path(tempfile.mkdtemp(prefix="imprint-memory-"))
    try:
        corpus = args.corpus.expanduser().resolve()
        if args.files:
            corpus = limited_copy(corpus, args.files, work / "copy")
        else:
            shutil.copytree(corpus, work / "copy" / corpus.name)
            corpus = work / "copy" / corpus.name
        note(f"ingest: {len(corpus_files(corpus)[1])} files from a copy at {corpus}")
        data = work / "data"
        result = ingest(corpus, work, data)
        print(f"ingest: {result}")
        print(f"calls: {calls(data, args.calls)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
