"""Store benchmark: ingest throughput, hybrid search latency by store size, actors vs direct.

Run from the repository root:

    .venv/bin/python -m benchmark.store [--corpus ../shared/corpus] [--corpus-limit FILES]
                                        [--sizes 1000,10000] [--queries 50]

It prints one table to stdout (progress goes to stderr) and writes the same figures as JSON
to `benchmark/out/store-<UTC timestamp>.json`. Everything it stores lives in one temporary
folder, removed at the end: each Runtime gets its own data dir there, and IMPRINT_DATA_DIR
points there too, so nothing is written under ~/.local/share. The configuration is the
defaults plus any IMPRINT_* environment overrides (`load_config` on that empty folder); the
effective embedding threads, batch size and reader pool size are printed. Logging is set up
as the server does it: warnings on stderr, every actor message as a JSON line in a log file.

Method
------
1. Ingest. A fresh data dir; the runtime is started, the workspace opened and the embedder
   warmed on a full batch of corpus text before the clock starts. `ingest_path` then ingests
   the corpus folder (chunk, tag, embed, write through the writer actor); its chunks/s is set
   beside the raw embedder's on the same chunk texts: `Embedder.embed` (the same instance,
   so the same threads and batch size) called once per file on that file's chunks, as the
   pipeline calls it. ingest/raw is the share of the raw embedding rate the whole pipeline
   keeps. A second `ingest_path` of the unchanged folder is timed too (every file unchanged).
2. Search by size. For each size N a fresh store of exactly N records is built by writing
   records through the writer actor with precomputed embeddings, not by embedding again
   (10k chunks at ~8 chunks/s would take 20 minutes): the ingested chunks with their real
   embeddings from step 1, then, while more are needed, copies of them, each copy's content
   given a suffix (so its id differs) and its vector perturbed by gaussian noise (sigma 0.01
   per dimension, cosine ~0.98 to the original) and re-normalised. A size at or below the
   corpus takes its first N chunks. Queries are heading lines drawn from the corpus
   (seeded), run with `search_rows(ActorReads(runtime), query, mode="hybrid")`, each timed
   alone with `time.perf_counter` after untimed warm-up queries; p50 and p95 are reported.
   Each query's time includes embedding the query text.
3. Actors vs direct. On the largest store, the same queries through `ActorReads` (pooled
   reader actors; vector and lexical reads run at the same time) and `DirectReads` (the same
   store calls in the caller's thread, one after the other), interleaved query by query
   with the order alternating, after warm-up; p50 of each and actors/direct.

Run time on a 2-core machine: the whole corpus is ~1,570 chunks (~175 files). At ~8 chunks/s
of embedding (an idle machine) the ingest and raw passes take about 3.3 minutes each and the
whole run about 8 minutes with the default sizes and queries; on a busy machine embedding
was seen at ~3.4 chunks/s, which doubles that. `--corpus-limit FILES` ingests only that many
files, spread evenly over the corpus (copied to the temporary folder): ~9 chunks a file, so
`--corpus-limit 80` halves the embedding time. Building the 10k store and timing the
searches take about a minute more. The 1-minute load average at start and end is printed,
because other work on the machine skews every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmark import _common as common
from benchmark._common import (
    DEFAULT_CORPUS,
    OUT_DIR,
    REPO,
    Latency,
    ingest_progress,
    latency,
    note,
)
from benchmark._direct import DirectReads
from imprint.actors.lifecycle import Runtime
from imprint.config import Config, load_config
from imprint.ingest.files import walk
from imprint.ingest.tags import supported
from imprint.logs import configure_logging
from imprint.reads.gateway import ActorReads, Reads
from imprint.reads.search import SearchArgs, search
from imprint.store.embedder import DIMENSIONS, Embedder
from imprint.store.records import Record, WriteBatch, content_sha, make_id
from imprint.types import WorkspaceName
from imprint.writes.files import ingest_path
from imprint.writes.gateway import Writes

SEED = 20240601
NOISE_SIGMA = 0.01
WRITE_BATCH = 500
WRITE_TIMEOUT_SEC = 600.0
WARMUP_QUERIES = 10
SEARCH_LIMIT = 10
PACKAGES = ("imprint", "chromadb", "onnxruntime", "pykka", "numpy")

_MD_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+<>:.])\1{2,}\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_MARKUP = re.compile(r"&#?\w+;|[`*_\[\]<>|]+")


# -- results -----------------------------------------------------------------------------


@dataclass
class IngestFigures:
    files: int
    chunks: int
    ingest_seconds: float
    ingest_chunks_per_sec: float
    raw_seconds: float
    raw_chunks_per_sec: float
    ingest_over_raw: float
    reingest_seconds: float
    reingest_unchanged_files: int
    reingest_over_first: float


@dataclass
class SizeFigures:
    records: int
    corpus_chunks: int
    copies: int
    build_seconds: float
    build_records_per_sec: float
    check: dict[str, Any]
    actors: Latency


@dataclass
class Comparison:
    records: int
    actors: Latency
    direct: Latency
    actors_over_direct_p50: float


@dataclass
class Results(common.Run):
    corpus: dict[str, Any]
    method: dict[str, str]
    ingest: IngestFigures | None = None
    sizes: list[SizeFigures] = field(default_factory=list)
    comparison: Comparison | None = None
    queries: list[str] = field(default_factory=list)
    total_seconds: float = 0.0


# -- helpers -----------------------------------------------------------------------------


def parse_sizes(raw: str) -> list[int]:
    sizes = []
    for part in raw.split(","):
        text = part.strip().lower()
        if not text:
            continue
        try:
            scale = {"k": 1_000, "m": 1_000_000}.get(text[-1:], 1)
            value = int(float(text[:-1] if scale > 1 else text) * scale)
        except ValueError:
            value = 0
        if value < 1:
            raise argparse.ArgumentTypeError(f"--sizes: {part!r} is not a positive count")
        sizes.append(value)
    if not sizes:
        raise argparse.ArgumentTypeError("--sizes: give at least one size, e.g. 1000,10000")
    return sorted(set(sizes))


def corpus_files(corpus: Path) -> tuple[Path, list[str]]:
    root, files, _ = walk(corpus)
    return root, [f for f in files if supported(f) and (root / f).is_file()]


def limited_copy(corpus: Path, limit: int, into: Path) -> Path:
    """`limit` files spread evenly over the corpus, copied under `into` by relative path."""
    root, files = corpus_files(corpus)
    if limit >= len(files):
        return corpus
    picked = [files[(i * len(files)) // limit] for i in range(limit)]
    target = into / root.name
    for rel in picked:
        dest = target / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / rel, dest)
    return target


def warm_texts(texts: Iterator[str], count: int, chars: int) -> list[str]:
    """`count` corpus-sized pieces of text, so warm-up batches look like real ones."""
    pieces: list[str] = []
    for text in texts:
        for start in range(0, len(text), chars):
            piece = text[start : start + chars].strip()
            if piece:
                pieces.append(piece)
            if len(pieces) >= count:
                return pieces
    return pieces or ["warm up"]


def read_texts(root: Path, files: Sequence[str]) -> Iterator[str]:
    for rel in files:
        try:
            yield (root / rel).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue


def heading(lines: Sequence[str], i: int) -> str:
    """The title line `i` holds, as plain words: a Markdown heading or an underlined reST one."""
    line = lines[i]
    md = _MD_HEADING.match(line)
    title = md.group(1) if md else ""
    nxt = lines[i + 1] if i + 1 < len(lines) else ""
    if not md and line.strip() and _RST_UNDERLINE.match(nxt):
        title = line if len(nxt.rstrip()) >= len(line.rstrip()) else ""
    return " ".join(_MARKUP.sub(" ", title).split())


def heading_queries(records: Sequence[Record], count: int) -> list[str]:
    """Heading lines outside code fences, de-duplicated, `count` drawn with a fixed seed."""
    found: set[str] = set()
    for rec in records:
        lines = rec.content.splitlines()
        fenced = False
        for i, line in enumerate(lines):
            if _FENCE.match(line):
                fenced = not fenced
            title = "" if fenced else heading(lines, i)
            if 2 <= len(title.split()) <= 12 and re.match(r"[A-Za-z][A-Za-z]{2}", title):
                found.add(title)
    pool = sorted(found)
    if not pool:
        pool = sorted({" ".join(r.content.split()[:8]) for r in records if r.content.strip()})
    rng = np.random.default_rng(SEED)
    if len(pool) >= count:
        return [pool[i] for i in rng.choice(len(pool), size=count, replace=False)]
    return [pool[i % len(pool)] for i in range(count)]


def open_default(runtime: Runtime) -> WorkspaceName:
    ws = runtime.resolve("", create=True)
    runtime.workspace(ws)
    return ws


def time_queries(reads: Reads, queries: Sequence[str]) -> list[float]:
    samples = []
    for query in queries:
        started = time.perf_counter()
        search(reads, SearchArgs(query=query, limit=SEARCH_LIMIT, mode="hybrid"))
        samples.append(time.perf_counter() - started)
    return samples


def warm_up(reads: Reads, queries: Sequence[str]) -> None:
    for query in queries[:WARMUP_QUERIES]:
        search(reads, SearchArgs(query=query, limit=SEARCH_LIMIT, mode="hybrid"))


# -- 1. ingest ---------------------------------------------------------------------------


def bench_ingest(
    data_dir: Path, config: Config, corpus: Path
) -> tuple[IngestFigures, list[Record], np.ndarray, Embedder]:
    """Ingest, re-ingest, then the raw embedder on the same chunks, grouped per file."""
    root, files = corpus_files(corpus)
    runtime = Runtime(data_dir, config).start()
    try:
        ws = open_default(runtime)
        embedder = runtime.embedder()
        warm = warm_texts(read_texts(root, files), embedder.batch_size, config.ingest.chunk_chars)
        for _ in range(2):
            embedder.embed(warm)

        note(f"ingest: {len(files)} files from {corpus}")
        started = time.perf_counter()
        report = ingest_path(runtime, corpus, progress=ingest_progress())
        ingest_seconds = time.perf_counter() - started
        note(f"ingest: {report.summary()}")

        started = time.perf_counter()
        again = ingest_path(runtime, corpus)
        reingest_seconds = time.perf_counter() - started
        note(f"re-ingest: {again.summary()}")

        reader = runtime.workspace(ws).reader()
        try:
            records = sorted(
                reader.fetch(reader.ids()).values(), key=lambda r: (r.source, r.chunk_index)
            )
        finally:
            reader.close()
    finally:
        runtime.stop()

    groups: dict[str, list[int]] = {}
    for index, rec in enumerate(records):
        groups.setdefault(rec.source, []).append(index)
    vectors = np.zeros((len(records), DIMENSIONS), dtype=np.float32)
    note(f"raw embedder: {len(records)} chunks in {len(groups)} per-file calls")
    started = time.perf_counter()
    for indexes in groups.values():
        vectors[indexes] = embedder.embed([records[i].content for i in indexes])
    raw_seconds = time.perf_counter() - started
    note(f"raw embedder: {raw_seconds:.1f} s")

    ingest_rate = report.chunks / ingest_seconds if ingest_seconds > 0 else 0.0
    raw_rate = len(records) / raw_seconds if raw_seconds > 0 else 0.0
    figures = IngestFigures(
        files=report.files,
        chunks=report.chunks,
        ingest_seconds=ingest_seconds,
        ingest_chunks_per_sec=ingest_rate,
        raw_seconds=raw_seconds,
        raw_chunks_per_sec=raw_rate,
        ingest_over_raw=ingest_rate / raw_rate if raw_rate > 0 else 0.0,
        reingest_seconds=reingest_seconds,
        reingest_unchanged_files=again.unchanged,
        reingest_over_first=reingest_seconds / ingest_seconds if ingest_seconds > 0 else 0.0,
    )
    return figures, records, vectors, embedder


# -- 2. stores of N records --------------------------------------------------------------


def replicated(
    records: Sequence[Record], vectors: np.ndarray, n: int, rng: np.random.Generator
) -> Iterator[tuple[list[Record], np.ndarray]]:
    """Batches of exactly `n` records in all: the corpus, then perturbed copies of it."""
    now = time.time()
    batch: list[Record] = []
    rows: list[np.ndarray] = []
    for j in range(n):
        copy, base = divmod(j, len(records))
        rec, vec = records[base], vectors[base]
        if copy:
            content = f"{rec.content}\n\n(copy {copy})"
            rec = rec.model_copy(
                update={
                    "id": make_id("bench-copy", copy, rec.id),
                    "content": content,
                    "source": f"copies/{copy}/{rec.source}",
                    "content_sha": content_sha(content),
                    "created_at": now,
                }
            )
            noisy = vec + rng.normal(0.0, NOISE_SIGMA, vec.shape).astype(np.float32)
            vec = noisy / np.linalg.norm(noisy)
        batch.append(rec)
        rows.append(vec)
        if len(batch) == WRITE_BATCH:
            yield batch, np.stack(rows)
            batch, rows = [], []
    if batch:
        yield batch, np.stack(rows)


def build_store(
    runtime: Runtime, records: Sequence[Record], vectors: np.ndarray, n: int
) -> tuple[float, dict[str, Any]]:
    writes = Writes(runtime)
    ws = writes.open("")
    rng = np.random.default_rng(SEED + n)
    started = time.perf_counter()
    for batch, rows in replicated(records, vectors, n, rng):
        writes.send(ws, WriteBatch(upserts=tuple(batch)), rows).get(timeout=WRITE_TIMEOUT_SEC)
    seconds = time.perf_counter() - started
    check = writes.reads.check(ws, seconds=WRITE_TIMEOUT_SEC)
    if check.records != n or check.vectors != n or not check.fts_ok:
        raise SystemExit(f"store of {n}: built wrong: {check}")
    return seconds, check.model_dump(exclude={"findings"})


def bench_sizes(
    base_dir: Path,
    config: Config,
    embedder: Embedder,
    records: Sequence[Record],
    vectors: np.ndarray,
    sizes: Sequence[int],
    queries: Sequence[str],
) -> tuple[list[SizeFigures], Comparison]:
    figures: list[SizeFigures] = []
    comparison: Comparison | None = None
    for n in sizes:
        runtime = Runtime(base_dir / f"store-{n}", config, embedder=embedder).start()
        try:
            note(f"store of {n}: writing through the writer")
            build_seconds, check = build_store(runtime, records, vectors, n)
            note(f"store of {n}: built in {build_seconds:.1f} s; {len(queries)} queries")
            actors = ActorReads(runtime)
            warm_up(actors, queries)
            figures.append(
                SizeFigures(
                    records=n,
                    corpus_chunks=len(records),
                    copies=(n - 1) // len(records),
                    build_seconds=build_seconds,
                    build_records_per_sec=n / build_seconds if build_seconds > 0 else 0.0,
                    check=check,
                    actors=latency(time_queries(actors, queries)),
                )
            )
            if n == sizes[-1]:
                note(f"store of {n}: actors vs direct")
                comparison = compare(runtime, queries, n)
        finally:
            runtime.stop()
    assert comparison is not None
    return figures, comparison


# -- 3. actors vs direct -----------------------------------------------------------------


def compare(runtime: Runtime, queries: Sequence[str], n: int) -> Comparison:
    actors = ActorReads(runtime)
    direct = DirectReads(runtime)
    try:
        warm_up(actors, queries)
        warm_up(direct, queries)
        by_actors: list[float] = []
        by_direct: list[float] = []
        for i, query in enumerate(queries):
            order: list[tuple[Reads, list[float]]] = [(actors, by_actors), (direct, by_direct)]
            for reads, samples in order if i % 2 == 0 else reversed(order):
                samples.extend(time_queries(reads, [query]))
    finally:
        direct.close()
    a, d = latency(by_actors), latency(by_direct)
    return Comparison(records=n, actors=a, direct=d, actors_over_direct_p50=a.p50_ms / d.p50_ms)


# -- output ------------------------------------------------------------------------------


def table(res: Results) -> str:
    cfg = res.config
    lines = [
        common.title(
            res,
            "store",
            f"; embedding threads {cfg['embedding_threads']}, batch "
            f"{cfg['embedding_batch_size']}; reader pool {cfg['reader_pool_size']}",
        ),
        f"corpus {res.corpus['path']}: {res.corpus['files']} files"
        + (f" (limited to {res.corpus['limit']})" if res.corpus["limit"] else ""),
        "",
    ]
    ing = res.ingest
    if ing is not None:
        lines += [
            f"ingest: {ing.files} files, {ing.chunks} chunks       seconds   chunks/s",
            f"  ingest_path, fresh store              {ing.ingest_seconds:8.1f}  "
            f"{ing.ingest_chunks_per_sec:9.2f}",
            f"  Embedder.embed, same chunks per file  {ing.raw_seconds:8.1f}  "
            f"{ing.raw_chunks_per_sec:9.2f}",
            f"  ingest / raw                                    {ing.ingest_over_raw:5.2f}",
            f"  re-ingest, unchanged ({ing.reingest_unchanged_files} files)"
            f"{'':<{max(0, 14 - len(str(ing.reingest_unchanged_files)))}}"
            f"{ing.reingest_seconds:8.2f}  ({ing.reingest_over_first:.4f} of first)",
            "",
        ]
    lines.append(
        f"hybrid search, {len(res.queries)} queries, ActorReads   build s   p50 ms   p95 ms"
    )
    for s in res.sizes:
        lines.append(
            f"  {s.records:>6} records ({s.copies:>3} copies)       {s.build_seconds:7.1f}  "
            f"{s.actors.p50_ms:7.1f}  {s.actors.p95_ms:7.1f}"
        )
    lines += [
        f"  stores built from the {res.sizes[0].corpus_chunks} corpus chunks and their real "
        "embeddings, written",
        "  through the writer; copies have a content suffix and their vectors gaussian noise",
        f"  (sigma {NOISE_SIGMA}) re-normalised, so none was embedded again",
        "",
    ]
    cmp = res.comparison
    if cmp is not None:
        lines += [
            f"actors vs direct, {cmp.records} records, interleaved    p50 ms   p95 ms",
            f"  search_rows(ActorReads)                   {cmp.actors.p50_ms:7.1f}  "
            f"{cmp.actors.p95_ms:7.1f}",
            f"  search_rows(DirectReads)                  {cmp.direct.p50_ms:7.1f}  "
            f"{cmp.direct.p95_ms:7.1f}",
            f"  actors / direct (p50)                     {cmp.actors_over_direct_p50:7.2f}",
            "",
        ]
    start, end = res.machine["loadavg_start"], res.machine["loadavg_end"]
    lines.append(
        f"total {res.total_seconds:.0f} s; load average (1 min) {start[0]:.2f} at start, "
        f"{end[0]:.2f} at end (other work on the machine skews every figure)"
    )
    return "\n".join(lines)


def write_json(res: Results) -> Path:
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    stamp = res.started_at.replace("-", "").replace(":", "")
    path = OUT_DIR / f"store-{stamp}.json"
    path.write_text(json.dumps(asdict(res), indent=2) + "\n", encoding="utf-8")
    return path


# -- main --------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Ingest throughput, hybrid search latency by size, actors vs direct."
    )
    parser.add_argument(
        "--corpus",
        type=Path,
        default=DEFAULT_CORPUS,
        help="folder to ingest (default: ../shared/corpus beside the repository)",
    )
    parser.add_argument(
        "--corpus-limit",
        type=int,
        default=0,
        metavar="FILES",
        help="ingest only this many files, spread over the corpus (default: all)",
    )
    parser.add_argument(
        "--sizes",
        type=parse_sizes,
        default=[1000, 10000],
        help="store sizes in records, comma-separated (default: 1000,10000)",
    )
    parser.add_argument(
        "--queries", type=int, default=50, help="timed queries per measurement (default: 50)"
    )
    args = parser.parse_args(argv)
    if args.queries < 1:
        parser.error("--queries: must be at least 1")
    if args.corpus_limit < 0:
        parser.error("--corpus-limit: must be 0 (all) or more")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    corpus = common.corpus_dir(args.corpus, "store")
    if corpus is None:
        return 2

    started_at = common.utc_now()
    # Every Runtime gets a data dir under `work`, removed at the end.
    with common.data_dir(None, "imprint-bench-store-") as work:
        configure_logging(work, level="warning", to_file=True)
        config = load_config(work)
        source = corpus
        if args.corpus_limit:
            source = limited_copy(corpus, args.corpus_limit, work / "corpus")
        _, files = corpus_files(source)
        if not files:
            print(f"store benchmark: no ingestible files under {corpus}", file=sys.stderr)
            return 2
        res = Results(
            started_at=started_at,
            command=[sys.executable, *sys.argv],
            machine=common.machine(PACKAGES),
            config={
                "embedding_threads": config.embedding.threads,
                "embedding_batch_size": config.embedding.batch_size,
                "embedding_max_tokens": config.embedding.max_tokens,
                "reader_pool_size": config.readers.pool_size,
                "chunk_chars": config.ingest.chunk_chars,
                "chroma_url": config.store.chroma_url,
            },
            corpus={"path": str(corpus), "files": len(files), "limit": args.corpus_limit},
            method={
                "ingest": "ingest_path into a fresh data dir after warm-up; raw = Embedder.embed "
                "on the same chunk texts, one call per file, same embedder instance",
                "reingest": "ingest_path of the same unchanged folder again",
                "stores": "exactly N records written through the writer actor with "
                "precomputed embeddings: corpus chunks with their real embeddings, then "
                f"copies with a content suffix and vectors + N(0, {NOISE_SIGMA}) "
                "re-normalised; nothing embedded again",
                "search": f"search_rows mode=hybrid limit={SEARCH_LIMIT}, heading-line "
                f"queries, {WARMUP_QUERIES} untimed warm-up queries, perf_counter per query",
                "comparison": "ActorReads and DirectReads on the largest store, interleaved "
                "per query with alternating order",
            },
        )

        res.ingest, records, vectors, embedder = bench_ingest(work / "ingest", config, source)
        res.queries = heading_queries(records, args.queries)
        res.sizes, res.comparison = bench_sizes(
            work, config, embedder, records, vectors, args.sizes, res.queries
        )
        res.total_seconds = common.elapsed()
        res.machine["loadavg_end"] = os.getloadavg()
        print(table(res))
        path = write_json(res)
        print(f"json: {path.relative_to(REPO)}")
        return 0


if __name__ == "__main__":
    sys.exit(main())
