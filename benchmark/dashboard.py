"""Dashboard benchmark: how long each page takes to render on an ingested store.

Run from the repository root:

    .venv/bin/python -m benchmark.dashboard [--corpus ../shared/corpus] [--corpus-limit FILES]
                                            [--runs 20]

Method: a temporary data dir (IMPRINT_DATA_DIR points there; removed at the end) gets the
corpus ingested (`--corpus-limit` files spread evenly over it; default 60, about 500 chunks;
0 = all) and a few recalls with 3-step plans, so the Traces page has something to list.
Logging is set up as the server does it (warnings on stderr, actor messages as JSON lines in
the data dir's log). The dashboard is served by `DashboardServer` over a started Runtime, as
the daemon serves it, and each page is fetched with httpx over 127.0.0.1: signed in with a
one-time token first, then 2 untimed warm-up fetches and `--runs` timed ones per page, each
timed alone with `time.perf_counter` from request to the last byte. It prints p50 and p95
per page (stdout; progress on stderr) and writes them as JSON to
`benchmark/out/dashboard-<UTC timestamp>.json`.

A recall run's own time (its steps under the step deadline) is reported on its own row; the
page's render time is the rest. The 1-minute load average is printed at start and end,
because other work on the machine skews every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from benchmark import _common as common
from benchmark._common import OUT_DIR, latency, note

PLAN = (
    '[{"tool": "search", "args": {"query": "actor mailbox", "limit": 5}},'
    ' {"tool": "list_sources", "args": {"limit": 10}},'
    ' {"tool": "kg_query", "args": {"subject": "imprint"}}]'
)


def spread_copy(corpus: Path, limit: int, into: Path) -> Path:
    from imprint.ingest.files import walk
    from imprint.ingest.tags import supported

    root, files, _ = walk(corpus)
    files = [f for f in files if supported(f) and (root / f).is_file()]
    if not limit or limit >= len(files):
        return corpus
    target = into / root.name
    for i in range(limit):
        rel = files[(i * len(files)) // limit]
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / rel, target / rel)
    return target


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=common.DEFAULT_CORPUS)
    parser.add_argument("--corpus-limit", type=int, default=60, metavar="FILES")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args(argv)
    if args.runs < 1 or args.corpus_limit < 0:
        parser.error("--runs: at least 1; --corpus-limit: 0 (all) or more")
    corpus = common.corpus_dir(args.corpus, "dashboard")
    if corpus is None:
        return 2
    args.corpus = corpus
    with common.data_dir(None, "imprint-dash-bench-") as work:
        return run(args, work)


def run(args: argparse.Namespace, work: Path) -> int:
    from imprint.actors.lifecycle import Runtime
    from imprint.config import load_config
    from imprint.dashboard import DashboardServer, Owner
    from imprint.logs import configure_logging
    from imprint.reads.gateway import ActorReads
    from imprint.reads.search import SearchArgs, search
    from imprint.recall.respond import RecallArgs, recall_text
    from imprint.writes.files import ingest_path

    data = work
    configure_logging(data, level="warning")
    load_start = os.getloadavg()[0]
    runtime = Runtime(data, load_config(data)).start()
    try:
        source = spread_copy(args.corpus, args.corpus_limit, work / "corpus")
        started = time.perf_counter()
        report = ingest_path(runtime, source, project="corpus")
        note(f"ingested {report.chunks} chunks in {time.perf_counter() - started:.0f} s")
        reads = ActorReads(runtime)
        for i in range(5):
            asked = RecallArgs(question=f"how do actors stop? ({i})", plan=PLAN)
            recall_text(reads, asked, timeout_sec=10)
        hit = search(reads, SearchArgs(query="actor mailbox")).hits[0].record
        server = DashboardServer(runtime, Owner(kind="benchmark"), port=0).start()
        try:
            results = measure(server, hit.id, hit.source, args.runs)
        finally:
            server.stop()
    finally:
        runtime.stop()
    load_end = os.getloadavg()[0]
    title = (
        f"dashboard page render, {report.chunks} chunks ({args.corpus_limit or 'all'} files), "
        f"p50/p95 of {args.runs}; load average {load_start:.2f} -> {load_end:.2f}"
    )
    meta = {"chunks": report.chunks, "corpus_limit": args.corpus_limit, "runs": args.runs}
    lines = page_lines(title, results, 22)
    print("\n".join(lines))
    path = write_pages("dashboard", meta, [load_start, load_end], results)
    note(f"wrote {path}")
    return 0


def measure(
    server: object, rid_memory: str, source: str, runs: int
) -> dict[str, tuple[float, float]]:
    from imprint.dashboard import DashboardServer

    assert isinstance(server, DashboardServer)
    base = f"http://127.0.0.1:{server.port}"
    origin = {"Origin": base}
    with httpx.Client(base_url=base, timeout=120) as client:
        assert client.get(server.url()).status_code == 303
        traces = client.get("/traces").text
        recall_id = traces.split('href="/traces/', 1)[1].split('"', 1)[0]
        recall_form = {
            "csrf": server.guard.csrf,
            "question": "how do actors stop?",
            "plan": PLAN,
            "max_chars": "4000",
            "condense": "on",
        }
        pages: dict[str, tuple[str, str, dict[str, str]]] = {
            "overview": ("GET", "/", {}),
            "search": ("GET", "/search", {"q": "how does an actor stop its mailbox"}),
            "recall (form)": ("GET", "/recall", {}),
            "recall (run)": ("POST", "/recall", recall_form),
            "traces": ("GET", "/traces", {}),
            "trace (waterfall)": ("GET", f"/traces/{recall_id}", {}),
            "settings": ("GET", "/settings", {}),
            "sources": ("GET", "/sources", {}),
            "source": ("GET", "/source", {"source": source, "project": "corpus"}),
            "record": ("GET", f"/memory/{rid_memory}", {}),
        }
        return time_pages(client, pages, runs, headers=origin)


Timings = dict[str, tuple[float, float]]  # page -> (p50 ms, p95 ms)


def time_pages(
    client: httpx.Client,
    pages: dict[str, tuple[str, str, dict[str, str]]],
    runs: int,
    headers: dict[str, str] | None = None,
) -> Timings:
    """Each page (method, path, params) fetched `runs` times after two warm-ups; its p50 and
    p95. A page that does not answer 200 ends the run."""
    results: Timings = {}
    for name, (method, path, params) in pages.items():
        samples = []
        for i in range(runs + 2):
            t0 = time.perf_counter()
            if method == "GET":
                r = client.get(path, params=params)
            else:
                r = client.post(path, data=params, headers=headers)
            elapsed = time.perf_counter() - t0
            if r.status_code != 200:
                raise SystemExit(f"{name}: HTTP {r.status_code}: {r.text[:300]}")
            if i >= 2:
                samples.append(elapsed)
        lat = latency(samples)
        results[name] = (lat.p50_ms, lat.p95_ms)
        note(f"{name}: p50 {results[name][0]:.1f} ms, {len(r.content) / 1000:.0f} kB")
    return results


def page_lines(title: str, results: Timings, width: int) -> list[str]:
    lines = [title, f"{'page':<{width}} {'p50 ms':>8} {'p95 ms':>8}"]
    lines += [f"{name:<{width}} {p50:>8.1f} {p95:>8.1f}" for name, (p50, p95) in results.items()]
    return lines


def write_pages(stem: str, meta: dict[str, object], load: list[float], results: Timings) -> Path:
    """The run's figures as `{OUT_DIR}/{stem}-<UTC time>.json`."""
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    path = OUT_DIR / f"{stem}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.json"
    pages = {k: {"p50_ms": v[0], "p95_ms": v[1]} for k, v in results.items()}
    path.write_text(json.dumps({**meta, "load_average": load, "pages": pages}, indent=2))
    return path


if __name__ == "__main__":
    sys.exit(main())
