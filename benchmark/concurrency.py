"""Concurrency: a 4-step recall beside the same 4 steps run one after another.

    .venv/bin/python -m benchmark.concurrency [--data-dir /tmp/bench-recall-data] [--repeats 7]

Uses a data dir where `python -m benchmark.runtime recall` ingested the corpus (it ingests the
corpus itself when the folder is new, which takes minutes). For each 4-step plan it times
(a) `run_plan`: the RecallCoordinator fans the steps out to StepRunners at once, and
(b) the same step functions called in turn in one thread, through the same reader pools.
It prints the medians and the speedup (sequential / concurrent) per plan and overall, the
ratio recall / one-after-another for the plan of four searches, and the p50 of one search
alone (a single caller: the recall machinery must not make it slower). Before its steps fan
out, the coordinator asks for their vector reads as one (`imprint.reads.gateway.ActorReads.
prime_vectors`): the queries embedded in one inference, the store searched in one call;
the search steps are then answered together, their records read in one fetch
(`imprint.reads.search.search_many`).
The query cache is off unless `--query-cache`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from benchmark._common import DEFAULT_CORPUS as CORPUS
from benchmark._common import settle_merges
from imprint.actors.lifecycle import Runtime
from imprint.config import load_config
from imprint.reads.gateway import ActorReads
from imprint.reads.search import SearchArgs, search
from imprint.recall.coordinator import run_plan
from imprint.recall.plan import SearchStep, parse_plan
from imprint.writes.files import ingest_path

PLANS = [
    [
        {"tool": "search", "args": {"query": "how does pykka stop an actor"}},
        {"tool": "search", "args": {"query": "structlog contextvars in threads"}},
        {"tool": "search", "args": {"query": "MCP server streamable HTTP transport"}},
        {"tool": "search", "args": {"query": "mopidy extension development"}},
    ],
    [
        {"tool": "search", "args": {"query": "actor proxies and futures"}},
        {"tool": "file_summary", "args": {"source": "pykka/docs/getting-started/actors.md"}},
        {"tool": "list_sources", "args": {"project": "corpus", "limit": 40}},
        {"tool": "search", "args": {"query": "structured logging processors", "mode": "lexical"}},
    ],
    [
        {"tool": "search", "args": {"query": "ingest queue serialization"}},
        {"tool": "search", "args": {"query": "tool annotations read only hint"}},
        {"tool": "file_chunks", "args": {"source": "structlog/docs/index.md", "end": 5}},
        {"tool": "kg_query", "args": {"subject": "pykka"}},
    ],
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default="/tmp/bench-recall-data")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument(
        "--query-cache",
        type=int,
        default=0,
        help="embedding.query_cache_size (default 0: every repeat embeds its queries, so the "
        "figures show batching, not the cache)",
    )
    args = parser.parse_args()
    data = Path(args.data_dir)
    config = load_config(data, environ={})
    config.embedding.query_cache_size = args.query_cache
    rt = Runtime(data, config).start()
    try:
        if not (data / "workspaces" / "default").exists():
            if not CORPUS.is_dir():
                print(
                    f"concurrency benchmark: corpus folder {CORPUS} not found; it is the shared "
                    "evaluation corpus (../shared/corpus beside the repository), which a clone "
                    "alone does not have",
                    file=sys.stderr,
                )
                return 2
            print("ingesting the corpus (minutes)...", file=sys.stderr)
            ingest_path(rt, CORPUS, project="corpus")
        reads = ActorReads(rt)
        ws = reads.open("")
        settle_merges(rt, ws)
        rows = []
        for plan in PLANS:
            steps = parse_plan(plan)
            run_plan(reads, ws, steps, 30, recall_id="warmup")
            together, apart = [], []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                run_plan(reads, ws, steps, 30, recall_id="bench")
                together.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                for step in steps:
                    try:
                        step.rows(reads, ws, None)
                    except Exception as exc:  # an error result costs time too
                        print(f"step {step.tool}: {exc}", file=sys.stderr)
                apart.append(time.perf_counter() - t0)
            rows.append((plan, statistics.median(apart), statistics.median(together)))
        alone = []
        queries = [s.args.query for s in parse_plan(PLANS[0]) if isinstance(s, SearchStep)]
        for _ in range(args.repeats):
            for query in queries:
                t0 = time.perf_counter()
                search(reads, SearchArgs(query=query), ws)
                alone.append(time.perf_counter() - t0)
    finally:
        rt.stop()
    print(
        f"4-step plans, median of {args.repeats}; reader pool {config.readers.pool_size}; "
        f"query cache {args.query_cache}"
    )
    print(f"{'plan':<48} {'one after another ms':>21} {'recall ms':>10} {'speedup':>8}")
    for plan, apart_s, together_s in rows:
        name = ", ".join(str(s["tool"]) for s in plan)[:48]
        print(
            f"{name:<48} {apart_s * 1000:>21.1f} {together_s * 1000:>10.1f} "
            f"{apart_s / together_s:>7.2f}x"
        )
    four = rows[0]
    print(
        f"four searches: recall / one after another = {four[2] / four[1]:.2f}; "
        f"one search alone p50 {statistics.median(alone) * 1000:.1f} ms "
        f"({len(alone)} searches)"
    )
    total_apart = sum(r[1] for r in rows)
    total_together = sum(r[2] for r in rows)
    print(
        f"{'all':<48} {total_apart * 1000:>21.1f} {total_together * 1000:>10.1f} "
        f"{total_apart / total_together:>7.2f}x"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
