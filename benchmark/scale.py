"""Scale: search, recall, writes, disk and memory at 10k, 100k and 1M chunks, embedded and
through a `chroma run` server, plus the handshake, the 4-search fan-out and actors vs
direct; published with PNG plots. The one command for all of it:

    python -m benchmark.scale --sizes 10k,100k,1M --server-sizes 10k,100k,1M \
        --data-dir /tmp/scale-data --corpus ../shared/corpus --publish

Stores. Every chunk is distinct and realistic: 3-8 sentences drawn (seeded) from the corpus's
prose (Markdown and reST outside code blocks), so its words differ from every other chunk's;
its vector is the mean of its sentences' embeddings, re-normalised (each sentence embedded
once with the real embedder and cached in `benchmark/out/scale-sentences-<key>.npz`, which
later runs reuse: a million chunks embedded one by one would take days here). Records carry
six projects, eight types and a source per eight chunks, and are written through the writer
actor (batches of 500) with those vectors. Each size is its own store, built and measured in
a fresh process, so its RSS is that store's owner alone. With `--data-dir` each store is kept
in `DIR/<size>` (`DIR/server-<size>` for the server's) with a record of its build, and a
later run measures it again without rebuilding. With so few distinct sentences, each one
recurs in about 1,000 chunks of the 1M store: an exact phrase matches far more chunks than
it would in real notes, a hard case for the lexical side.

At each size: hybrid, semantic and lexical search p50/p95 (`search_rows` through the reader
actors, each query timed alone, after warm-up), hybrid with a project filter (`where`), a
4-search recall (`run_plan`, the steps fanned out) and the same 4 searches one after another,
write throughput and build time, disk size of the store (and the server's data), and the
owner's RSS (plus the server's, for `--server-sizes`) and its peak. Queries are the first
4-8 words of corpus sentences (seeded), so every query has real matches. At the first size,
actors vs direct (`benchmark.store.compare`), and the latency of every read-only tool through
one real MCP session, `--tool-calls` calls each with arguments drawn from the store
(`benchmark._scale_tools`; a box plot per tool). Before the stores: the handshake as a stdio
client sees it (`benchmark.handshake`: cold with no daemon, warm with one). Load average is
recorded after every size. Stores are opened without the background re-index of an older
text format (as the CLI's one-shot commands do): it would re-embed every chunk with the
model, replacing the benchmark's vectors, while the searches are timed.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import multiprocessing
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmark import _common as common
from benchmark._common import DEFAULT_CORPUS, OUT_DIR, PUBLISHED, Latency, latency, note
from benchmark._scale_tools import measure_tools, plot_tools, table_tools
from benchmark.handshake import measure_handshake, prepare_store
from benchmark.store import compare, parse_sizes
from imprint._fs import atomic_write_text
from imprint.actors.lifecycle import Runtime
from imprint.config import Config, load_config
from imprint.logs import configure_logging
from imprint.reads.gateway import ActorReads
from imprint.reads.search import SearchArgs, search
from imprint.recall.coordinator import run_plan
from imprint.recall.plan import parse_plan
from imprint.store import lexical
from imprint.store.embedder import MODEL_NAME, Embedder
from imprint.store.records import Record, WriteBatch, content_sha, make_id
from imprint.writes.gateway import Writes

SEED = 20261130
WRITE_BATCH = 500
WRITE_TIMEOUT_SEC = 900.0
WARMUP = 5
PROJECTS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot")
TYPES = ("note", "decision", "pattern", "finding", "bug", "preference", "architecture", "milestone")
PACKAGES = ("imprint", "chromadb", "onnxruntime", "pykka", "numpy", "matplotlib")

_FENCE = re.compile(r"^\s*(```|~~~)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_MARKUP = re.compile(r"&#?\w+;|[`*_\[\]<>|#=]+|\(https?://\S+\)")


# -- results -----------------------------------------------------------------------------


@dataclass
class SizeRun:
    records: int
    build_seconds: float  # writing this size's new records
    write_records_per_sec: float
    check: dict[str, Any]
    disk_mb: float
    rss_mb: float
    peak_rss_mb: float
    hybrid: Latency
    semantic: Latency
    lexical: Latency
    lexical_every_word: Latency  # TERM_DOC_BUDGET lifted: the query as before the bound
    hybrid_every_word: Latency
    hybrid_project_filter: Latency
    recall_4_searches: Latency
    searches_4_in_sequence: Latency
    fanout_ratio_p50: float
    loadavg: list[float]
    reused: bool = False  # measured on a store an earlier run built (its build figures)
    build_peak_rss_mb: float = 0.0
    store: str = "embedded"  # or "server": Chroma through a `chroma run` on loopback
    server_rss_mb: float = 0.0  # that server's resident memory, beside the owner's
    samples_ms: dict[str, list[float]] = field(default_factory=dict)  # each timed call


@dataclass
class Results(common.Run):
    sentences: dict[str, Any]
    handshake: dict[str, Any] | None = None
    sizes: list[SizeRun] = field(default_factory=list)
    actors_vs_direct: dict[str, Any] | None = None
    queries: list[str] = field(default_factory=list)
    tools: dict[str, Any] | None = None  # per-tool latency through MCP at the first size
    total_seconds: float = 0.0


# -- the sentence pool and its embeddings ---------------------------------------------------


def corpus_sentences(corpus: Path, limit: int) -> list[str]:
    """Prose sentences of 6-60 words from the corpus's docs, outside code, de-duplicated."""
    found: dict[str, None] = {}
    for path in sorted(corpus.rglob("*")):
        if path.suffix not in (".md", ".rst", ".txt") or not path.is_file():
            continue
        fenced = False
        para: list[str] = []
        lines = [*path.read_text(encoding="utf-8", errors="replace").splitlines(), ""]
        for line in lines:
            if _FENCE.match(line):
                fenced = not fenced
                continue
            if fenced or line.startswith(("    ", "\t", ".. ", ":")):
                continue
            if line.strip():
                para.append(line.strip())
                continue
            text = " ".join(_MARKUP.sub(" ", " ".join(para)).split())
            para = []
            for sentence in _SENTENCE_END.split(text):
                words = sentence.split()
                if 6 <= len(words) <= 60 and sentence[-1:] in ".!?":
                    found[sentence] = None
                    if len(found) >= limit:
                        return list(found)
    return list(found)


def sentence_vectors(sentences: list[str], embedder: Embedder) -> tuple[np.ndarray, str]:
    """Each sentence's embedding, from the cache file when it holds this very list."""
    key = hashlib.sha256(
        ("\n".join(sentences) + "\0" + MODEL_NAME + str(embedder.model_file)).encode()
    ).hexdigest()[:16]
    path = OUT_DIR / f"scale-sentences-{key}.npz"
    if path.is_file():
        note(f"sentences: {len(sentences)} embeddings from {common.relative(path)}")
        return np.load(path)["vectors"], str(path)
    note(f"sentences: embedding {len(sentences)} (once; cached for later runs)")
    started = time.perf_counter()
    vectors = embedder.embed(sentences)
    note(f"sentences: {time.perf_counter() - started:.1f} s")
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    np.savez(path, vectors=vectors)
    return vectors, str(path)


class Chunks:
    """Chunk j: sentences idx[offsets[j]:offsets[j+1]] joined; vector their normalised mean.
    Drawn once for the largest size, so every smaller store is a prefix of the larger."""

    def __init__(self, sentences: list[str], vectors: np.ndarray, n: int) -> None:
        rng = np.random.default_rng(SEED)
        self.sentences, self.vectors = sentences, vectors
        counts = rng.integers(3, 9, size=n)
        self.offsets = np.concatenate([[0], np.cumsum(counts)])
        self.idx = rng.integers(0, len(sentences), size=int(self.offsets[-1]))
        self.now = time.time()

    def batch(self, start: int, end: int) -> tuple[list[Record], np.ndarray]:
        lo, hi = int(self.offsets[start]), int(self.offsets[end])
        picked = self.vectors[self.idx[lo:hi]]
        sums = np.add.reduceat(picked, self.offsets[start:end] - lo, axis=0)
        vecs = sums / np.linalg.norm(sums, axis=1, keepdims=True)
        records = []
        for j in range(start, end):
            parts = self.idx[self.offsets[j] : self.offsets[j + 1]]
            content = " ".join(self.sentences[i] for i in parts)
            project = PROJECTS[j % len(PROJECTS)]
            records.append(
                Record(
                    id=make_id("scale", j),
                    content=content,
                    project=project,
                    source=f"scale/{project}/doc-{j // 8:06d}.md",
                    source_type="file",
                    chunk_index=j % 8,
                    chunk_count=8,
                    type=TYPES[(j // 7) % len(TYPES)],
                    lang="markdown",
                    layer="docs",
                    created_at=self.now,
                    content_sha=content_sha(content),
                )
            )
        return records, vecs.astype(np.float32)


def make_queries(sentences: Sequence[str], count: int) -> list[str]:
    rng = np.random.default_rng(SEED + 1)
    picked = rng.choice(len(sentences), size=count, replace=False)
    out = []
    for i in picked:
        words = re.findall(r"[A-Za-z][A-Za-z0-9_-]+", sentences[int(i)])
        out.append(" ".join(words[: int(rng.integers(4, 9))]))
    return out


# -- measuring ------------------------------------------------------------------------------


def rss_mb() -> tuple[float, float]:
    """This process's resident and peak resident memory, in MB. The peak is VmHWM, not
    getrusage's ru_maxrss: Linux carries that across exec, so a spawned process would
    report its parent's peak when that was higher."""
    found = {"VmRSS:": 0.0, "VmHWM:": 0.0}
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            key = line.split(maxsplit=1)[0] if line.strip() else ""
            if key in found:
                found[key] = int(line.split()[1]) / 1024
    return found["VmRSS:"], found["VmHWM:"]


def process_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


@contextlib.contextmanager
def chroma_server(folder: Path) -> Iterator[tuple[str, int]]:
    """A `chroma run` on 127.0.0.1 keeping its data in `folder`: its URL and process id."""
    binary = shutil.which("chroma", path=str(Path(sys.executable).parent)) or shutil.which("chroma")
    if binary is None:
        raise SystemExit("--server-sizes: the chroma CLI (from the chromadb package) is missing")
    port = common.free_port()
    folder.mkdir(parents=True, exist_ok=True)
    url = f"http://127.0.0.1:{port}"
    with (folder / "server.log").open("ab") as log:
        proc = subprocess.Popen(
            [binary, "run", "--host", "127.0.0.1", "--port", str(port), "--path", str(folder)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
        )
        try:
            if not common.wait_answering(proc, f"{url}/api/v2/heartbeat", status=200):
                raise SystemExit(f"chroma run did not start; see {folder / 'server.log'}")
            yield url, proc.pid
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def disk_mb(folder: Path) -> float:
    total = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    return total / 1e6


def timed(calls: Sequence[Any]) -> list[float]:
    samples = []
    for call in calls:
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return samples


def measure_size(
    runtime: Runtime, folder: Path, queries: list[str], build_s: float, new: int, n: int
) -> SizeRun:
    reads = ActorReads(runtime)
    ws = reads.open("")
    for query in queries[:WARMUP]:
        search(reads, SearchArgs(query=query, mode="hybrid"))

    def searched(query: str, mode: str, project: str = "") -> Any:
        args = SearchArgs(query=query, project=project, mode=mode)  # type: ignore[arg-type]
        return lambda: search(reads, args)

    lat: dict[str, Latency] = {}
    raw: dict[str, list[float]] = {}

    def kept(name: str, seconds: list[float]) -> Latency:
        raw[name] = [round(x * 1000, 2) for x in seconds]
        return latency(seconds)

    for mode in ("hybrid", "semantic", "lexical"):
        lat[mode] = kept(mode, timed([searched(q, mode) for q in queries]))
        note(f"  {n}: {mode} p50 {lat[mode].p50_ms:.1f} ms p95 {lat[mode].p95_ms:.1f} ms")
    budget = lexical.TERM_DOC_BUDGET
    lexical.TERM_DOC_BUDGET = 10**12  # read at each query: the unbounded query, as before
    try:
        lat["lexical_all"] = latency(timed([searched(q, "lexical") for q in queries]))
        lat["hybrid_all"] = latency(timed([searched(q, "hybrid") for q in queries]))
    finally:
        lexical.TERM_DOC_BUDGET = budget
    note(f"  {n}: every word: lexical p50 {lat['lexical_all'].p50_ms:.1f} ms")
    lat["filter"] = kept(
        "hybrid_project_filter",
        timed([searched(q, "hybrid", PROJECTS[i % len(PROJECTS)]) for i, q in enumerate(queries)]),
    )
    plans = [
        parse_plan([{"tool": "search", "args": {"query": q}} for q in queries[i : i + 4]])
        for i in range(0, len(queries) - 3, 4)
    ]
    run_plan(reads, ws, plans[0], 30, recall_id="scale-warmup")
    together: list[float] = []
    apart: list[float] = []
    for k, steps in enumerate(plans):
        # Interleaved, the order alternating, as store.compare does for actors vs direct.
        def fanned(steps: Any = steps, k: int = k) -> Any:
            return lambda: run_plan(reads, ws, steps, 30, recall_id=f"scale-{k}")

        def in_turn(steps: Any = steps) -> Any:
            return lambda: [s.rows(reads, ws, None) for s in steps]

        pair = [(fanned(), together), (in_turn(), apart)]
        for call, samples in pair if k % 2 == 0 else reversed(pair):
            samples.extend(timed([call]))
    lat["recall"] = kept("recall_4_searches", together)
    lat["apart"] = kept("searches_4_in_sequence", apart)
    now, peak = rss_mb()
    return SizeRun(
        records=n,
        build_seconds=build_s,
        write_records_per_sec=new / build_s if build_s > 0 else 0.0,
        check={},
        disk_mb=disk_mb(folder),
        rss_mb=now,
        peak_rss_mb=peak,
        hybrid=lat["hybrid"],
        semantic=lat["semantic"],
        lexical=lat["lexical"],
        lexical_every_word=lat["lexical_all"],
        hybrid_every_word=lat["hybrid_all"],
        hybrid_project_filter=lat["filter"],
        recall_4_searches=lat["recall"],
        searches_4_in_sequence=lat["apart"],
        fanout_ratio_p50=statistics.median(together) / statistics.median(apart),
        loadavg=list(os.getloadavg()),
        samples_ms=raw,
    )


def grow(runtime: Runtime, chunks: Chunks, start: int, end: int) -> tuple[float, dict[str, Any]]:
    writes = Writes(runtime)
    ws = writes.open("")
    started = time.perf_counter()
    last = started
    for lo in range(start, end, WRITE_BATCH):
        records, vecs = chunks.batch(lo, min(lo + WRITE_BATCH, end))
        writes.send(ws, WriteBatch(upserts=tuple(records)), vecs).get(timeout=WRITE_TIMEOUT_SEC)
        if time.perf_counter() - last > 30:
            last = time.perf_counter()
            note(f"  writing: {lo + len(records)}/{end}")
    seconds = time.perf_counter() - started
    check = writes.reads.check(ws, seconds=WRITE_TIMEOUT_SEC)
    common.settle_merges(runtime, ws)
    if check.records != end or check.vectors != end or not check.fts_ok:
        raise SystemExit(f"store of {end}: built wrong: {check}")
    return seconds, check.model_dump(exclude={"findings"})


# -- plots and text ---------------------------------------------------------------------


def plot(res: Results, folder: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FormatStrFormatter

    made = []
    embedded = [s for s in res.sizes if s.store == "embedded"]
    served = [s for s in res.sizes if s.store == "server"]
    sizes = [s.records for s in embedded]
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    for name, color in (
        ("hybrid", "C0"),
        ("semantic", "C1"),
        ("lexical", "C2"),
        ("lexical_every_word", "C5"),
        ("hybrid_project_filter", "C3"),
        ("recall_4_searches", "C4"),
    ):
        p50 = [getattr(s, name).p50_ms for s in embedded]
        p95 = [getattr(s, name).p95_ms for s in embedded]
        label = name.replace("_", " ")
        ax.plot(sizes, p50, "o-", color=color, label=f"{label} p50")
        ax.plot(sizes, p95, "o--", color=color, alpha=0.5, label=f"{label} p95")
    if served:
        ax.plot(
            [s.records for s in served],
            [s.hybrid.p50_ms for s in served],
            "s:",
            color="black",
            label="hybrid p50, chroma run server",
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("chunks in the store")
    ax.set_ylabel("ms")
    loads = ", ".join(f"{s.loadavg[0]:.1f}" for s in embedded)
    ax.set_title(f"Search latency by store size (2 cores, load average {loads})", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2, loc="upper left")
    fig.tight_layout()
    fig.savefig(folder / "latency_vs_size.png", dpi=110)
    plt.close(fig)
    made.append("latency_vs_size.png")

    if res.handshake:
        fig, ax = plt.subplots(figsize=(6, 3.4))
        names, values = [], []
        for kind, rows in res.handshake["summary"].items():
            for key in ("initialize_s", "spawn_to_search_s"):
                names.append(f"{kind}\n{key.removesuffix('_s').replace('_', ' ')}")
                values.append(rows[key]["p50_ms"])
        ax.bar(names, values, color=["C0", "C1", "C2", "C3"][: len(values)])
        ax.axhline(300, color="grey", ls=":", lw=1)
        ax.axhline(1500, color="grey", ls="--", lw=1)
        ax.set_ylabel("p50 ms")
        ax.set_title("imprint serve, as a stdio client sees it", fontsize=10)
        fig.tight_layout()
        fig.savefig(folder / "handshake.png", dpi=110)
        plt.close(fig)
        made.append("handshake.png")

    if all(s.samples_ms for s in res.sizes):
        shown = ("hybrid", "semantic", "lexical", "hybrid_project_filter", "recall_4_searches")
        fig, axes = plt.subplots(1, len(res.sizes), figsize=(3.2 * len(res.sizes), 3.8))
        for ax, s in zip(np.atleast_1d(axes), res.sizes, strict=True):
            ax.boxplot(
                [s.samples_ms[k] for k in shown],
                tick_labels=["hybrid", "semantic", "lexical", "filter", "recall 4"],
                whis=(5, 95),
                showfliers=True,
            )
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
            ax.yaxis.set_minor_formatter(FormatStrFormatter("%g"))
            ax.tick_params(axis="y", which="both", labelsize=7)
            ax.set_title(f"{s.records:,} ({s.store})", fontsize=9)
            ax.tick_params(axis="x", labelrotation=45, labelsize=8)
            ax.grid(True, axis="y", which="both", alpha=0.3)
        np.atleast_1d(axes)[0].set_ylabel("ms per call (box: p25-p75, whiskers p5-p95)")
        fig.suptitle("Latency distribution per search mode and recall", fontsize=10)
        fig.tight_layout()
        fig.savefig(folder / "latency_distribution.png", dpi=110)
        plt.close(fig)
        made.append("latency_distribution.png")

    fig, ax = plt.subplots(figsize=(7, 3.6))
    labels = [f"{s.records:,}\n{s.store}" for s in res.sizes]
    x = np.arange(len(res.sizes))
    ax.bar(
        x - 0.2, [s.recall_4_searches.p50_ms for s in res.sizes], 0.4, label="recall: 4 fanned out"
    )
    ax.bar(
        x + 0.2, [s.searches_4_in_sequence.p50_ms for s in res.sizes], 0.4, label="4 in sequence"
    )
    for i, s in enumerate(res.sizes):
        ax.annotate(
            f"{s.fanout_ratio_p50:.2f}",
            (i, max(s.recall_4_searches.p50_ms, s.searches_4_in_sequence.p50_ms)),
            ha="center",
            va="bottom",
            fontsize=8,
        )
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_ylabel("p50 ms")
    title = "4 searches: one recall vs one after another (ratio above)"
    if res.actors_vs_direct:
        title += f"; actors/direct {res.actors_vs_direct['actors_over_direct_p50']:.2f}"
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(folder / "concurrency.png", dpi=110)
    plt.close(fig)
    made.append("concurrency.png")

    fig, ax = plt.subplots(figsize=(6, 3.4))
    ax.plot(sizes, [s.rss_mb for s in embedded], "o-", label="owner RSS MB (searching)")
    ax.plot(sizes, [s.build_peak_rss_mb for s in embedded], "o--", label="owner peak RSS MB")
    ax.plot(sizes, [s.disk_mb for s in embedded], "o-", label="disk MB")
    ax.axhline(4096, color="grey", ls=":", lw=1, label="4 GB: the RSS goal")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("chunks in the store")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(folder / "memory_disk.png", dpi=110)
    plt.close(fig)
    made.append("memory_disk.png")
    if res.tools:
        made.append(plot_tools(res.tools, folder))
    return made


def table(res: Results) -> str:
    lines = [
        common.title(res, "scale", f"; sentences {res.sentences['count']}"),
        "",
        f"{'store':>8} {'records':>8} {'build s':>8} {'rec/s':>7} {'disk MB':>8} {'RSS MB':>7} "
        f"{'peak':>6} "
        f"{'hyb p50/p95':>12} {'sem p50/p95':>12} {'lex p50/p95':>12} {'lex-all p50':>11} "
        f"{'filt p50':>8} "
        f"{'recall p50':>10} {'seq p50':>8} {'ratio':>6} {'load':>5}",
    ]
    for s in res.sizes:
        lines.append(
            f"{s.store + ('*' if s.reused else ''):>8} {s.records:>8} {s.build_seconds:>8.1f} "
            f"{s.write_records_per_sec:>7.0f} {s.disk_mb:>8.1f} "
            f"{s.rss_mb + s.server_rss_mb:>7.0f} {s.build_peak_rss_mb:>6.0f} "
            f"{s.hybrid.p50_ms:>5.1f}/{s.hybrid.p95_ms:<6.1f} "
            f"{s.semantic.p50_ms:>5.1f}/{s.semantic.p95_ms:<6.1f} "
            f"{s.lexical.p50_ms:>5.1f}/{s.lexical.p95_ms:<6.1f} "
            f"{s.lexical_every_word.p50_ms:>11.1f} "
            f"{s.hybrid_project_filter.p50_ms:>8.1f} {s.recall_4_searches.p50_ms:>10.1f} "
            f"{s.searches_4_in_sequence.p50_ms:>8.1f} {s.fanout_ratio_p50:>6.2f} "
            f"{s.loadavg[0]:>5.1f}"
        )
    if any(s.reused for s in res.sizes):
        lines.append("* measured on a store an earlier run built: its build figures")
    if any(s.server_rss_mb for s in res.sizes):
        lines.append("server rows: RSS is the owner's plus the chroma run server's")
    if res.actors_vs_direct:
        c = res.actors_vs_direct
        lines.append(
            f"\nactors vs direct at {c['records']}: {c['actors']['p50_ms']:.1f} / "
            f"{c['direct']['p50_ms']:.1f} ms p50 = {c['actors_over_direct_p50']:.2f}"
        )
    if res.tools:
        lines.extend(["", *table_tools(res.tools)])
    if res.handshake:
        lines.append("")
        for kind, rows in res.handshake["summary"].items():
            shown = ", ".join(f"{k.removesuffix('_s')} {v['p50_ms']:.0f}" for k, v in rows.items())
            lines.append(f"handshake {kind} p50 ms: {shown}")
        lines.append(f"handshake load average: {res.handshake['loadavg']}")
    start, end = res.machine["loadavg_start"], res.machine["loadavg_end"]
    lines.append(
        f"total {res.total_seconds:.0f} s; load average {start[0]:.2f} at start, "
        f"{end[0]:.2f} at end"
    )
    return "\n".join(lines)


def readme(res: Results, command: str, plots: list[str]) -> str:
    text = [
        common.title(res, "scale", ""),
        "",
        f"Command: `{command}`",
        "",
        *(f"![{p}]({p})" for p in plots),
        "",
        "```",
        table(res),
        "```",
        "",
        "Method: see the docstring of `benchmark/scale.py`. Figures are from one run on a "
        "shared, loaded 2-core machine; the load average is given beside each size.",
        "",
    ]
    return "\n".join(text)


# -- main ---------------------------------------------------------------------------------


BUILT = "scale-built.json"  # in a store's folder once it is complete: what the build took


@dataclass
class SizeJob:
    """One size, run in a fresh process (so its RSS is this store's owner alone)."""

    folder: Path
    records: int
    corpus: Path
    sentences: int
    queries: int
    compare: bool
    chroma_url: str = ""  # a `chroma run` server's URL; empty: the embedded store
    server_pid: int = 0
    server_dir: Path | None = None  # where that server keeps its data (counted on disk)
    tool_calls: int = 0  # timed calls of each read-only tool through MCP; 0: none


@dataclass
class SizeDone:
    size: SizeRun
    sentences: dict[str, Any]
    queries: list[str]
    actors_vs_direct: dict[str, Any] | None
    tools: dict[str, Any] | None = None


def built_before(folder: Path, n: int) -> dict[str, Any] | None:
    """What the earlier build of this store recorded, when it finished one of `n` records;
    a folder holding anything else is refused rather than measured or overwritten."""
    marker = folder / BUILT
    if marker.is_file():
        done: dict[str, Any] = json.loads(marker.read_text(encoding="utf-8"))
        if done.get("records") == n:
            return done
        raise SystemExit(f"--data-dir: {folder} holds a store of {done.get('records')}, not {n}")
    if folder.exists() and any(folder.iterdir()):
        raise SystemExit(f"--data-dir: {folder} holds an unfinished store; remove it to rebuild")
    return None


def run_size(job: SizeJob) -> SizeDone:
    """Build (or reuse) the store of `job.records` in `job.folder` and measure it."""
    earlier = built_before(job.folder, job.records)
    reused = earlier is not None
    with common.data_dir(job.folder, "imprint-scale-") as root:
        config: Config = load_config(root)
        # Every timed query embeds its text: the cache would hide the embedding (the
        # handshake's daemon keeps its default cache).
        config.embedding.query_cache_size = 0
        config.store.chroma_url = job.chroma_url
        configure_logging(root, level="warning", to_file=False)
        runtime = Runtime(root, config, reindex=False).start()
        try:
            sentences = corpus_sentences(job.corpus, job.sentences)
            vectors, cache = sentence_vectors(sentences, runtime.embedder())
            queries = make_queries(sentences, job.queries)
            if earlier is None:
                note(f"store: building {job.records} in {root}")
                chunks = Chunks(sentences, vectors, job.records)
                build_s, check = grow(runtime, chunks, 0, job.records)
                _, build_peak = rss_mb()
                earlier = {
                    "records": job.records,
                    "build_seconds": build_s,
                    "check": check,
                    "build_peak_rss_mb": build_peak,
                }
                atomic_write_text(root / BUILT, json.dumps(earlier, indent=1))
                note(f"store: {job.records} records in {build_s:.1f} s")
            else:
                note(f"store: reusing {root} ({job.records} records, built before)")
                # Counts, not the writer's check: that lists every id of both indexes.
                store = runtime.workspace(runtime.resolve("", create=True))
                counts = (store.sqlite.counts()["records"], store.vectors.count())
                if counts != (job.records, job.records):
                    raise SystemExit(
                        f"--data-dir: {root}: expected {job.records} records and vectors, "
                        f"found {counts}"
                    )
            size = measure_size(
                runtime, root, queries, earlier["build_seconds"], job.records, job.records
            )
            size.check = earlier["check"]
            size.reused = reused
            if job.chroma_url:
                size.store = "server"
                size.server_rss_mb = process_rss_mb(job.server_pid)
                size.disk_mb += disk_mb(job.server_dir) if job.server_dir else 0.0
            size.build_peak_rss_mb = earlier["build_peak_rss_mb"]
            compared = None
            if job.compare:
                cmp = compare(runtime, queries, job.records)
                compared = asdict(cmp)
                note(f"  actors/direct {cmp.actors_over_direct_p50:.2f}")
            tools = (
                measure_tools(runtime, queries, job.tool_calls, job.records)
                if job.tool_calls
                else None
            )
        finally:
            runtime.stop()
    info = {"count": len(sentences), "cache": common.relative(Path(cache)).as_posix()}
    return SizeDone(
        size=size, sentences=info, queries=queries, actors_vs_direct=compared, tools=tools
    )


def load_results(folder: Path) -> Results:
    """A published run's results.json as the dataclasses it was written from."""
    data = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    sizes = []
    for size in data.pop("sizes"):
        fields: dict[str, Any] = {
            k: Latency(**v) if isinstance(v, dict) and "p50_ms" in v else v for k, v in size.items()
        }
        sizes.append(SizeRun(**fields))
    return Results(**data, sizes=sizes)


def write_figures(res: Results, folder: Path) -> None:
    plots = plot(res, folder)
    text = readme(res, common.shown_command(res.command), plots)
    (folder / "README.md").write_text(text, encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split(". The one command")[0] + ".")
    parser.add_argument(
        "--sizes",
        type=parse_sizes,
        default=[10_000, 100_000, 1_000_000],
        help="store sizes (10k,100k,1M)",
    )
    parser.add_argument("--queries", type=int, default=40, help="timed queries per mode (40)")
    parser.add_argument("--sentences", type=int, default=20_000, help="sentence pool (20000)")
    parser.add_argument(
        "--handshake", default="3,5", help="cold,warm handshake rounds; 0,0 skips (3,5)"
    )
    parser.add_argument(
        "--tool-calls",
        type=int,
        default=20,
        help="timed calls of each read-only tool through MCP at the first size; 0 skips (20)",
    )
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--publish", action="store_true", help="into benchmark/published/")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="keep each size's store in DIR/<size> and reuse it on the next run "
        "(default: temporary stores)",
    )
    parser.add_argument(
        "--server-sizes",
        type=parse_sizes,
        default=[],
        help="these sizes again with Chroma behind a `chroma run` server on loopback",
    )
    parser.add_argument(
        "--replot",
        type=Path,
        default=None,
        help="only draw the plots and README of a published run's folder again",
    )
    args = parser.parse_args(argv)
    if args.replot is not None:
        if not (args.replot / "results.json").is_file():
            parser.error(f"--replot: {args.replot} holds no results.json")
        write_figures(load_results(args.replot), args.replot)
        return 0
    if not 8 <= args.queries <= 400:
        parser.error("--queries: 8-400")
    if not 0 <= args.tool_calls <= 200:
        parser.error("--tool-calls: 0-200")
    if max(args.sizes) > 1_000_000:
        parser.error("--sizes: at most 1000000")
    if args.server_sizes and max(args.server_sizes) > 1_000_000:
        parser.error("--server-sizes: at most 1000000")
    try:
        cold, warm = (int(x) for x in args.handshake.split(","))
    except ValueError:
        parser.error("--handshake: two counts, cold,warm (e.g. 3,5)")
    corpus = common.corpus_dir(args.corpus, "scale")
    if corpus is None:
        return 2
    started = time.perf_counter()
    res = Results(
        started_at=common.utc_now(),
        command=list(sys.argv),
        machine=common.machine(PACKAGES, loadavg_start=os.getloadavg()),
        config={},
        sentences={},
    )
    if cold or warm:
        with common.data_dir(None, "imprint-scale-hs-") as root:
            prepare_store(root, corpus, 20)
            shake = measure_handshake(root, f"{sys.executable} -m imprint.launch serve", cold, warm)
        res.handshake = {
            "serve": shake.serve,
            "summary": {
                k: {n: asdict(v) for n, v in rows.items()} for k, rows in shake.summary().items()
            },
            "rounds": {
                "cold": [asdict(r) for r in shake.cold],
                "warm": [asdict(r) for r in shake.warm],
            },
            "loadavg": shake.loadavg,
        }
    defaults = Config()
    res.config = {
        "embedding_threads": defaults.embedding.threads,
        "reader_pool_size": defaults.readers.pool_size,
        "query_cache_size": 0,
    }
    with common.data_dir(args.data_dir, "imprint-scale-") as root:
        # One fresh process per size: its RSS is that store's owner alone, not what the
        # smaller stores before it left in this process.
        spawn = multiprocessing.get_context("spawn")
        for i, n in enumerate(args.sizes):
            job = SizeJob(root / str(n), n, corpus, args.sentences, args.queries, i == 0)
            job.tool_calls = args.tool_calls if i == 0 else 0
            with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as pool:
                done = pool.submit(run_size, job).result()
            res.sizes.append(done.size)
            res.sentences, res.queries = done.sentences, done.queries
            if done.actors_vs_direct is not None:
                res.actors_vs_direct = done.actors_vs_direct
            if done.tools is not None:
                res.tools = done.tools
        for n in args.server_sizes:
            folder = root / f"server-{n}"
            with chroma_server(folder / "chroma-server") as (url, pid):
                job = SizeJob(folder / "owner", n, corpus, args.sentences, args.queries, False)
                job.chroma_url, job.server_pid = url, pid
                job.server_dir = folder / "chroma-server"
                with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as pool:
                    done = pool.submit(run_size, job).result()
            res.sizes.append(done.size)
    res.total_seconds = time.perf_counter() - started
    res.machine["loadavg_end"] = os.getloadavg()
    print(table(res))
    if args.publish:
        folder = common.publish(res, PUBLISHED, "scale", "")
        write_figures(res, folder)
        print(f"evidence: {common.relative(folder)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
