"""Search p50 of two checkouts side by side, query by query, in one run.

Timings on a shared machine drift by tens of percent from one minute to the next, so two
runs one after the other cannot show a 5 % difference. Here two worker processes, one per
checkout, each open their own copy of one store and answer the same queries in turn: A, B,
B, A, ... (the order alternates so neither always goes first). Each worker times only its
own `search` through the reader actors, after a warm-up. Every pair ran within milliseconds
of each other, under the same load, so the ratio of the two medians (and the median of the
per-query ratios) compares the code, not the minute.

    python -m benchmark.paired_search --store /tmp/scale/10000 \
        --a /path/to/old/checkout --b . [--rounds 3] [--mode hybrid]

`--store` is a data dir (e.g. one `benchmark.scale --data-dir` kept); it is copied twice
into a temporary folder so the two never share a Chroma folder. Each worker runs with its
checkout first on `sys.path` and the interpreter of `--python-a` / `--python-b` (default:
this one), so the old checkout may need its own virtual environment.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

# The worker: reads `mode\tquery` lines, answers each with the search's milliseconds. It calls
# whichever search entry the checkout has (the argument model, or the older keyword form).
WORKER = r"""
import os, sys, time
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
from pathlib import Path
from imprint.actors.lifecycle import running
from imprint.config import load_config
from imprint.reads.gateway import ActorReads
import imprint.reads.search as s
root = Path(sys.argv[1])
with running(root, load_config(root), reindex=False) as rt:
    reads = ActorReads(rt)
    if hasattr(s, "SearchArgs"):
        def one(q, mode):
            return s.search(reads, s.SearchArgs(query=q, mode=mode))
    else:
        def one(q, mode):
            return s.search_rows(reads, q, mode=mode)
    print("ready", flush=True)
    for line in sys.stdin:
        mode, q = line.rstrip("\n").split("\t", 1)
        t = time.perf_counter()
        one(q, mode)
        print(f"{(time.perf_counter() - t) * 1000:.3f}", flush=True)
"""


def _queries() -> list[str]:
    lookups = json.loads((HERE / "retrieval.json").read_text(encoding="utf-8"))["lookups"]
    return [str(x["query"]) for x in lookups]


class Worker:
    def __init__(self, python: str, checkout: Path, store: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(checkout), "IMPRINT_DATA_DIR": str(store)}
        self.proc = subprocess.Popen(
            [python, "-c", WORKER, str(store)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=checkout,
        )
        assert self.proc.stdout is not None
        if self.proc.stdout.readline().strip() != "ready":
            sys.exit(f"worker for {checkout} did not start")

    def time(self, mode: str, query: str) -> float:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{mode}\t{query}\n")
        self.proc.stdin.flush()
        return float(self.proc.stdout.readline())

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", type=Path, required=True, help="a data dir to search")
    ap.add_argument("--a", type=Path, required=True, help="checkout A (the baseline)")
    ap.add_argument("--b", type=Path, default=Path("."), help="checkout B (default: this one)")
    ap.add_argument("--python-a", default=sys.executable)
    ap.add_argument("--python-b", default=sys.executable)
    ap.add_argument("--rounds", type=int, default=3, help="passes over the queries (3)")
    ap.add_argument("--mode", default="hybrid", help="hybrid, semantic or lexical (hybrid)")
    args = ap.parse_args()
    if not (args.store / "chroma").exists() and not any(args.store.iterdir()):
        sys.exit(f"--store: {args.store} holds no store")
    queries = _queries()
    with tempfile.TemporaryDirectory(prefix="paired-") as tmp:
        stores = [Path(tmp) / "a", Path(tmp) / "b"]
        for copy in stores:
            shutil.copytree(args.store, copy)
        # Each copy is opened once by its own checkout first: what a checkout sets on open
        # takes effect at the next one (Chroma reads `ef_search` when it loads the index,
        # at the first read), and the timed worker is that next one.
        for python, checkout, copy in (
            (args.python_a, args.a, stores[0]),
            (args.python_b, args.b, stores[1]),
        ):
            Worker(python, checkout.resolve(), copy).close()
        a = Worker(args.python_a, args.a.resolve(), stores[0])
        b = Worker(args.python_b, args.b.resolve(), stores[1])
        try:
            for q in queries[:20]:  # warm-up, not counted
                a.time(args.mode, q), b.time(args.mode, q)
            ta: list[float] = []
            tb: list[float] = []
            for r in range(args.rounds):
                for i, q in enumerate(queries):
                    first_a = (i + r) % 2 == 0
                    x, y = (a, b) if first_a else (b, a)
                    t1, t2 = x.time(args.mode, q), y.time(args.mode, q)
                    ta.append(t1 if first_a else t2)
                    tb.append(t2 if first_a else t1)
        finally:
            a.close()
            b.close()
    pa, pb = statistics.median(ta), statistics.median(tb)
    per_query = statistics.median(y / x for x, y in zip(ta, tb, strict=True))
    print(f"{args.mode} search, {len(ta)} pairs, load average {os.getloadavg()[0]:.1f}")
    print(f"  A {args.a}: p50 {pa:.2f} ms")
    print(f"  B {args.b}: p50 {pb:.2f} ms")
    print(f"  B/A: {pb / pa:.3f} (medians), {per_query:.3f} (median per-query ratio)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
