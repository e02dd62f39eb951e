"""Backup: time and size of `imprint backup` at 100k records while searches run, and the
search p95 during the backup beside the idle p95, in one run (issue 30):

    nice -n 10 python -m benchmark.backup --records 100000 --publish

The store. 100k records cannot be embedded here in the time a run has (the bundled model
embeds about 18 chunks a second on this machine's two cores: 100k would take 1.5 hours), so
the store is filled with generated text and vectors, written through the writer actor as
ingest writes them (SQLite, FTS5 and Chroma alike): each record is 40-90 words drawn
(seeded) from a fixed vocabulary, its vector a seeded random unit vector of the model's 384
dimensions. What a backup costs depends on the bytes of the SQLite file and the Chroma
folder, not on how the vectors were made, so this store costs what a real one of its size
does. Queries are real: 4-6 words of the vocabulary, embedded by the real model, so the
searches do what a client's do (hybrid mode, through the reader actors).

The run: the store is built and its BM25 segments merged; `--idle` searches are timed one
after another (idle p95); then one thread searches without pause while `make_backup` (what
`imprint backup` and the rolling backups run: the writer holding still while SQLite's online
backup and the Chroma copy run, then the copy read back against its manifest) backs the data
dir up; every search that started during the backup is timed (the p95 during backup). The
backup's wall time, its size and the store's size on disk are recorded.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmark import _common as common
from benchmark._common import PUBLISHED, Latency, Run, latency, note
from imprint.actors.lifecycle import Runtime
from imprint.config import Config
from imprint.reads.gateway import ActorReads
from imprint.reads.search import SearchArgs, search
from imprint.store.records import Record, WriteBatch, content_sha, make_id
from imprint.writes.backup import make_backup
from imprint.writes.gateway import Writes

SEED = 20261202
DIM = 384
WRITE_BATCH = 500
WRITE_TIMEOUT_SEC = 900.0
PROJECTS = ("alpha", "bravo", "charlie", "delta")
_WORDS = (
    "actor queue writer reader index vector lexical segment merge journal backup restore "
    "manifest checksum workspace project memory decision finding pattern bug fix release "
    "deploy staging production migration schema table column query plan cache token budget "
    "recall search hybrid semantic fusion rank score chunk source file heading module test "
    "fixture timeout deadline retry backoff lock mutex thread process socket daemon client "
    "server session handshake protocol message request response error warning log trace "
    "metric latency throughput memory disk folder permission secret redact config setting "
    "default option argument flag command install package version wheel lockfile upgrade "
    "python rust sqlite chroma postgres redis kafka nats docker kubernetes linux macos "
    "window editor terminal prompt model embedding tokenizer onnx runtime batch thread pool"
)
VOCABULARY = tuple(dict.fromkeys(_WORDS.split()))


@dataclass
class Results(Run):
    records: int = 0
    build_sec: float = 0.0
    store_mb: float = 0.0
    backup: dict[str, Any] = field(default_factory=dict)
    idle: Latency | None = None
    during: Latency | None = None
    p95_ratio: float | None = None
    loadavg: dict[str, Any] = field(default_factory=dict)


def build(runtime: Runtime, n: int) -> float:
    """Write `n` generated records (text and unit vectors) through the writer; seconds."""
    rng = np.random.default_rng(SEED)
    words = np.asarray(VOCABULARY)
    writes = Writes(runtime)
    ws = writes.open("", create=True)
    now = time.time()
    started = last = time.perf_counter()
    for lo in range(0, n, WRITE_BATCH):
        hi = min(lo + WRITE_BATCH, n)
        records = []
        for j in range(lo, hi):
            content = " ".join(words[rng.integers(0, len(words), size=int(rng.integers(40, 91)))])
            project = PROJECTS[j % len(PROJECTS)]
            records.append(
                Record(
                    id=make_id("backup-bench", j),
                    content=content,
                    project=project,
                    source=f"bench/{project}/doc-{j // 8:06d}.md",
                    source_type="file",
                    chunk_index=j % 8,
                    chunk_count=8,
                    lang="markdown",
                    layer="docs",
                    created_at=now,
                    content_sha=content_sha(content),
                )
            )
        vecs = rng.standard_normal((hi - lo, DIM)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        writes.send(ws, WriteBatch(upserts=tuple(records)), vecs).get(timeout=WRITE_TIMEOUT_SEC)
        if time.perf_counter() - last > 30:
            last = time.perf_counter()
            note(f"  writing: {hi}/{n}")
    seconds = time.perf_counter() - started
    check = writes.reads.check(ws, seconds=WRITE_TIMEOUT_SEC)
    if check.records != n or check.vectors != n or not check.fts_ok:
        raise SystemExit(f"store of {n}: built wrong: {check}")
    common.settle_merges(runtime, ws)
    return seconds


def queries(count: int) -> list[str]:
    rng = np.random.default_rng(SEED + 1)
    out = []
    for _ in range(count):
        picked = rng.choice(len(VOCABULARY), size=int(rng.integers(4, 7)), replace=False)
        out.append(" ".join(VOCABULARY[int(i)] for i in picked))
    return list(dict.fromkeys(out))


def timed_search(reads: ActorReads, query: str) -> float:
    started = time.perf_counter()
    search(reads, SearchArgs(query=query, mode="hybrid"))
    return time.perf_counter() - started


def disk_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6


def measure(res: Results, data: Path, idle_searches: int) -> None:
    runtime = Runtime(data, Config(), reindex=False).start()
    try:
        note(f"building {res.records} records")
        res.build_sec = round(build(runtime, res.records), 1)
        res.store_mb = round(disk_mb(data / "workspaces"), 1)
        res.loadavg["after_build"] = os.getloadavg()
        reads = ActorReads(runtime)
        asked = queries(idle_searches * 20)
        for q in asked[:5]:  # warm-up: model loaded, caches filled
            timed_search(reads, q)
        note(f"idle: {idle_searches} searches")
        res.idle = latency([timed_search(reads, q) for q in asked[5 : 5 + idle_searches]])
        res.loadavg["after_idle"] = os.getloadavg()
        pending = iter(asked[5 + idle_searches :])
        during: list[float] = []
        window = threading.Event()
        done = threading.Event()

        def searcher() -> None:
            for q in pending:
                if done.is_set():
                    return
                counted = window.is_set()
                seconds = timed_search(reads, q)
                if counted:
                    during.append(seconds)

        thread = threading.Thread(target=searcher, name="bench-searcher")
        thread.start()
        dest = data / "bench-backup"
        note("backing up while searching")
        window.set()
        started = time.perf_counter()
        record = make_backup(runtime, dest)
        wall = time.perf_counter() - started
        window.clear()
        done.set()
        thread.join()
        res.loadavg["after_backup"] = os.getloadavg()
        res.backup = {
            "wall_sec": round(wall, 2),
            "bytes": record.bytes,
            "mb": round(record.bytes / 1e6, 1),
            "verified": record.verified,
            "error": record.error,
            "mb_per_sec": round(record.bytes / 1e6 / wall, 1),
        }
        res.during = latency(during) if during else None
        if res.idle and res.during:
            res.p95_ratio = round(res.during.p95_ms / res.idle.p95_ms, 2)
        shutil.rmtree(dest, ignore_errors=True)
    finally:
        runtime.stop()


def table(res: Results) -> str:
    lines = [common.title(res, "backup", f", {res.records} records"), ""]
    b = res.backup
    lines.append(
        f"store: {res.records} records, {res.store_mb} MB on disk (built in {res.build_sec} s)"
    )
    lines.append(
        f"backup: {b.get('wall_sec')} s, {b.get('mb')} MB ({b.get('mb_per_sec')} MB/s), "
        f"verified: {b.get('verified')} {b.get('error') or ''}".rstrip()
    )
    lines += ["", "| hybrid search | n | p50 ms | p95 ms | mean ms |", "|---|---|---|---|---|"]
    for name, lat in (("idle", res.idle), ("during the backup", res.during)):
        if lat is not None:
            lines.append(
                f"| {name} | {lat.queries} | {lat.p50_ms:.1f} | {lat.p95_ms:.1f} | "
                f"{lat.mean_ms:.1f} |"
            )
    lines += ["", f"p95 during / idle: {res.p95_ratio}", f"load average: {res.loadavg}"]
    return "\n".join(lines)


def readme(res: Results, command: str) -> str:
    return "\n".join(
        [
            "# Backup at scale (issue 30)",
            "",
            f"Command: `{command}`; load average at start {res.machine['loadavg_start']}, "
            f"at the end {res.machine.get('loadavg_end')} (other work shared the machine).",
            "",
            (__doc__ or "").split("\n\n", 2)[-1].strip(),
            "",
            "```",
            table(res),
            "```",
            "",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000, help="100 to 10,000,000")
    parser.add_argument("--idle", type=int, default=200, help="idle searches timed, 10-10,000")
    parser.add_argument("--data-dir", type=Path, default=None, help="kept; default a temp dir")
    parser.add_argument("--publish", action="store_true", help="write benchmark/published/...")
    parser.add_argument("--out", type=Path, default=PUBLISHED, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not 100 <= args.records <= 10_000_000:
        parser.error("--records: must be 100 to 10,000,000")
    if not 10 <= args.idle <= 10_000:
        parser.error("--idle: must be 10 to 10,000")
    res = Results(
        started_at=common.utc_now(),
        command=sys.argv,
        machine=common.machine(["chromadb", "onnxruntime"]),
        config={"records": args.records, "idle_searches": args.idle, "write_batch": WRITE_BATCH},
        records=args.records,
    )
    with common.data_dir(args.data_dir, "imprint-backup-bench-") as data:
        measure(res, data, args.idle)
    common.conclude(res, table, readme if args.publish else None, args.out, "backup")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
