"""retrieval: does `search` put the right file first? A fixed query set with gold sources,
per mode and per half (issue 16).

Run from the repository root, on a data dir where the corpus is already ingested with one
project per corpus folder (`python -m benchmark.snapshot_reads build` makes one):

    .venv/bin/python -m benchmark.retrieval --data-dir PATH [--queries benchmark/retrieval.json]
                                            [--repeats 3] [--corpus ../shared/corpus]
                                            [--publish [--out FOLDER]]

The data dir is opened by this process
(Chroma's embedded store has one owner): give it a copy, never a folder a server is using.

Method
------
1. Queries: `benchmark/retrieval.json`, written by reading the corpus before any ranking
   change; each lookup has a developer's query, its gold `(project, source)` pairs (any one
   answers it) and a half, `tune` or `heldout`. Ranking changes may be tuned on `tune` only;
   `heldout` is what they are judged on. The file is refused with a list of problems if an id
   repeats, a half is neither, a gold pair is missing, or a gold source is not in the store.
2. Search: for each lookup and mode (hybrid, semantic, lexical; the order rotates from one
   lookup to the next), `search_rows(ActorReads(runtime), query, mode=mode)` with the MCP
   tool's defaults (limit 10, no filters), the same row function the `search` tool calls,
   through the reader actors of a started `Runtime`. Its output is `format_search(rows,
   max_chars)`, the tool's formatter, at 1,200 and at 4,000 characters (the default).
   `--repeats` times; the rows must be the same every time (a difference is noted).
   Untimed warm-up searches run first.
3. Figures per mode and half (a hit: a result whose project and source are a gold pair):
   - top-1: lookups whose first result is a hit;
   - recall@5: lookups with a hit among the first 5 results;
   - R@5 / R@10 by file: lookups with a hit among the first 5 / 10 distinct files of the
     results, in order (a search that shows one block per source returns distinct files, so
     these equal recall@5 and a hit within 10; a per-chunk list shows fewer files);
   - MRR@10: the mean of 1/rank of the first hit within 10 (0 without one);
   - gold visible @1200 / @4000: lookups whose formatted output shows a gold pair in a
     block header (`[n] id | project | source#chunk [+#more] | ...`) within that max_chars;
   - search p50 ms: the median over lookups of each lookup's median `search_rows` time
     (`time.perf_counter`, query embedding included, formatting not).
4. `--publish` writes `benchmark/published/retrieval-<UTC timestamp>/` (or under `--out`):
   `README.md` (the table, per-lookup first-hit ranks, the setup) and `results.json`
   (everything, each lookup's top 10 included, each hit with the ranks its fusion used).
"""

from __future__ import annotations

import argparse
import hashlib
import re
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmark import _common as common
from benchmark._common import DEFAULT_CORPUS, PUBLISHED, REPO, note, revisions_table
from imprint.actors.lifecycle import Runtime
from imprint.config import load_config
from imprint.logs import configure_logging
from imprint.reads.gateway import ActorReads
from imprint.reads.search import Mode, SearchArgs, format_search, search
from imprint.reads.status import status_row
from imprint.store.context import TEXT_FORMAT

DEFAULT_QUERIES = REPO / "benchmark" / "retrieval.json"
MODES: tuple[Mode, ...] = ("hybrid", "semantic", "lexical")
HALVES = ("tune", "heldout")
BUDGETS = (1200, 4000)
LIMIT = 10  # the search tool's default
WARMUP = 5
PACKAGES = ("imprint", "chromadb", "onnxruntime", "pykka", "numpy")
# A block header: "[n] id | project | source#chunk | type | score", where the chunk may be
# followed by more of the same field (` +#7,#2`, a symbol path): the source ends at the first
# `#digits` that ends the field or is followed by a space.
HEADER = re.compile(r"^\[\d+\] \S+ \| (.*?) \| (.*?)#\d+(?: [^|]*)? \| ", re.M)


@dataclass(frozen=True)
class Lookup:
    id: str
    query: str
    gold: tuple[tuple[str, str], ...]
    half: str


def load_queries(path: Path) -> list[Lookup]:
    """The query file, checked; SystemExit with every problem found."""
    _, items, problems = common.read_lookups(path)
    out: list[Lookup] = []
    for lid, item in items:
        if item.get("half") not in HALVES:
            problems.append(f"{lid}: half {item.get('half')!r} is not one of {', '.join(HALVES)}")
        gold = tuple(
            (str(g.get("project", "")), str(g.get("source", ""))) for g in item.get("gold") or []
        )
        if not gold or not all(p and s for p, s in gold):
            problems.append(f"{lid}: gold needs at least one {{project, source}} pair")
        if not str(item.get("query", "")).strip():
            problems.append(f"{lid}: empty query")
        out.append(Lookup(lid, str(item.get("query", "")), gold, str(item.get("half"))))
    common.refuse("retrieval", path, problems)
    return out


# -- measuring ---------------------------------------------------------------------------


@dataclass
class Searched:
    """One lookup in one mode."""

    mode: str
    rank: int | None  # of the first hit within LIMIT, 1-based
    file_rank: int | None  # of the first hit among the distinct files of the results
    visible: dict[str, bool]  # str(max_chars) -> a gold pair shown in a block header
    hits: list[list[Any]]  # [project, source, chunk_index, score, why, also] best first
    ms: list[float]  # search_rows per repeat
    identical_across_repeats: bool = True


@dataclass
class LookupResult:
    id: str
    query: str
    half: str
    gold: list[list[str]]
    modes: dict[str, Searched] = field(default_factory=dict)


@dataclass
class Figures:
    lookups: int
    top1: int
    recall5: int
    files5: int
    files10: int
    mrr10: float
    visible: dict[str, int]
    p50_ms: float


@dataclass
class Results(common.Run):
    store: dict[str, Any]
    queries: dict[str, Any]
    method: dict[str, str]
    repeats: int
    lookups: list[LookupResult] = field(default_factory=list)
    figures: dict[str, dict[str, Figures]] = field(default_factory=dict)  # half -> mode ->
    total_seconds: float = 0.0


def shown_sources(text: str) -> set[tuple[str, str]]:
    return {(m.group(1), m.group(2)) for m in HEADER.finditer(text)}


def search_once(reads: ActorReads, lookup: Lookup, mode: Mode, by_chunk: bool = False) -> Searched:
    # by_chunk only when asked: a checkout from before issue 32 has no such argument.
    args = SearchArgs(query=lookup.query, limit=LIMIT, mode=mode)
    if by_chunk:
        args = args.model_copy(update={"by_chunk": True})
    started = time.perf_counter()
    rows = search(reads, args)
    ms = (time.perf_counter() - started) * 1000
    gold = set(lookup.gold)
    pairs = [(h.record.project, h.record.source) for h in rows.hits]
    rank = next((i for i, pair in enumerate(pairs, start=1) if pair in gold), None)
    files = list(dict.fromkeys(pairs))
    file_rank = next((i for i, pair in enumerate(files, start=1) if pair in gold), None)
    visible = {
        str(budget): bool(gold & shown_sources(format_search(rows, budget))) for budget in BUDGETS
    }
    hits = [
        [
            h.record.project,
            h.record.source,
            h.record.chunk_index,
            round(h.score, 6),
            h.why.model_dump(exclude={"fused"}) if h.why else None,
            list(getattr(h, "also", ())),  # absent in a checkout from before issue 32
        ]
        for h in rows.hits
    ]
    return Searched(mode=mode, rank=rank, file_rank=file_rank, visible=visible, hits=hits, ms=[ms])


def run_lookups(
    runtime: Runtime, lookups: Sequence[Lookup], repeats: int, by_chunk: bool = False
) -> list[LookupResult]:
    reads = ActorReads(runtime)
    for lookup in lookups[:WARMUP]:
        for mode in MODES:
            search_once(reads, lookup, mode, by_chunk)
    out = []
    for i, lookup in enumerate(lookups):
        result = LookupResult(lookup.id, lookup.query, lookup.half, [list(g) for g in lookup.gold])
        order = MODES[i % len(MODES) :] + MODES[: i % len(MODES)]
        for _ in range(repeats):
            for mode in order:
                got = search_once(reads, lookup, mode, by_chunk)
                first = result.modes.setdefault(mode, got)
                if first is got:
                    continue
                first.ms += got.ms
                if got.hits != first.hits:
                    first.identical_across_repeats = False
                    note(f"  {lookup.id} {mode}: results changed across repeats")
        result.modes = {mode: result.modes[mode] for mode in MODES}
        out.append(result)
        if (i + 1) % 10 == 0:
            note(f"searched {i + 1}/{len(lookups)} lookups")
    return out


def figures(results: Sequence[LookupResult], mode: str) -> Figures:
    runs = [r.modes[mode] for r in results]
    return Figures(
        lookups=len(runs),
        top1=sum(s.rank == 1 for s in runs),
        recall5=sum(s.rank is not None and s.rank <= 5 for s in runs),
        files5=sum(s.file_rank is not None and s.file_rank <= 5 for s in runs),
        files10=sum(s.file_rank is not None and s.file_rank <= 10 for s in runs),
        mrr10=sum(1 / s.rank for s in runs if s.rank) / len(runs) if runs else 0.0,
        visible={str(b): sum(s.visible[str(b)] for s in runs) for b in BUDGETS},
        p50_ms=statistics.median(statistics.median(s.ms) for s in runs) if runs else 0.0,
    )


def all_figures(results: Sequence[LookupResult]) -> dict[str, dict[str, Figures]]:
    groups = {half: [r for r in results if r.half == half] for half in HALVES}
    groups["all"] = list(results)
    return {name: {mode: figures(rs, mode) for mode in MODES} for name, rs in groups.items()}


# -- output ------------------------------------------------------------------------------


def _count(k: int, n: int) -> str:
    return f"{k}/{n} {100 * k / n:.0f}%" if n else "-"


def table(res: Results) -> str:
    m, st = res.machine, res.store
    lines = [
        common.title(
            res,
            "retrieval",
            f"; reader pool {res.config['reader_pool_size']}; search limit {LIMIT}; median of "
            f"{res.repeats} repeats per lookup",
        ),
        f"queries {res.queries['path']}: {res.queries['lookups']} lookups "
        f"({', '.join(f'{res.queries[h]} {h}' for h in HALVES)}); store {st['path']}: "
        f"{st['records']} records, {len(st['projects'])} projects",
        "",
        f"  {'':<10}{'top-1':>12}{'recall@5':>12}{'R@5 file':>12}{'R@10 file':>12}"
        f"{'MRR@10':>8}{'gold@1200':>12}{'gold@4000':>12}{'p50 ms':>8}",
    ]
    for half, by_mode in res.figures.items():
        n = next(iter(by_mode.values())).lookups
        lines.append(f"{half} ({n})")
        for mode, f in by_mode.items():
            lines.append(
                f"  {mode:<10}{_count(f.top1, n):>12}{_count(f.recall5, n):>12}"
                f"{_count(f.files5, n):>12}{_count(f.files10, n):>12}{f.mrr10:>8.3f}"
                f"{_count(f.visible['1200'], n):>12}{_count(f.visible['4000'], n):>12}"
                f"{f.p50_ms:>8.1f}"
            )
    lines += [
        "",
        f"total {res.total_seconds:.0f} s; load average (1 min) {m['loadavg_start'][0]:.2f} at "
        f"start, {m['loadavg_end'][0]:.2f} at end (other work on the machine skews p50)",
    ]
    return "\n".join(lines)


def readme(res: Results, command: str) -> str:
    m, rev = res.machine, res.machine["revision"]
    changes = rev.get("imprint_changes")
    lines = [
        f"# Retrieval benchmark, {res.started_at}",
        "",
        f"{res.queries['lookups']} lookups over the shared corpus, each with the source file(s) "
        "that answer it, written before any ranking change; `search_rows` through the reader "
        "actors with the search tool's defaults (limit 10), formatted by `format_search` at "
        "1,200 and 4,000 characters. Counts are lookups; R@5 / R@10 by file count a gold "
        "file among the first 5 / 10 distinct files of the results; MRR@10 is the mean "
        "reciprocal rank of the first gold result within 10; p50 is the median search_rows "
        "time.",
        "",
        "| half | mode | top-1 | recall@5 | R@5 by file | R@10 by file | MRR@10 "
        "| gold visible @1200 | gold visible @4000 | search p50 ms |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for half, by_mode in res.figures.items():
        for mode, f in by_mode.items():
            n = f.lookups
            lines.append(
                f"| {half} | {mode} | {_count(f.top1, n)} | {_count(f.recall5, n)} | "
                f"{_count(f.files5, n)} | {_count(f.files10, n)} | "
                f"{f.mrr10:.3f} | {_count(f.visible['1200'], n)} | "
                f"{_count(f.visible['4000'], n)} | {f.p50_ms:.1f} |"
            )
    lines += [
        "",
        "## Per lookup",
        "",
        "Rank of the first gold result within 10 (`-`: none) and whether a gold source was "
        "visible at 1,200 / 4,000 characters (`y`/`n`).",
        "",
        "| lookup | half | query | hybrid | semantic | lexical |",
        "|---|---|---|---|---|---|",
    ]
    for r in res.lookups:
        cells = []
        for mode in MODES:
            s = r.modes[mode]
            vis = "".join("y" if s.visible[str(b)] else "n" for b in BUDGETS)
            cells.append(f"{s.rank or '-'} ({vis[0]}/{vis[1]})")
        query = r.query.replace("|", "\\|")
        lines.append(f"| `{r.id}` | {r.half} | {query} | {' | '.join(cells)} |")
    lines += [
        "",
        "## Setup",
        "",
        f"- Command: `{command}`",
        f"- Code: commit `{rev.get('commit', '?')}`"
        + (f", with uncommitted changes under imprint/: `{changes}`" if changes else "")
        + ".",
        f"- Machine: {m['cpus']} CPUs ({m['cpu']}), {m['platform']}, Python {m['python']}; "
        f"load average (1 min) {m['loadavg_start'][0]:.2f} at start, "
        f"{m['loadavg_end'][0]:.2f} at end.",
        f"- Queries: `{res.queries['path']}` (sha256 `{res.queries['sha256'][:16]}`).",
        f"- Store: `{res.store['path']}`, the corpus `{res.store['corpus']}` ingested one "
        f"project per folder: {res.store['records']} records in projects "
        + ", ".join(f"{p} ({k})" for p, k in res.store["projects"].items())
        + f"; reader pool {res.config['reader_pool_size']}, embedding threads "
        f"{res.config['embedding_threads']}; indexed text format "
        f"{res.store.get('text_format', 1)}.",
        "- Fusion (`search.*`): "
        + ", ".join(f"{k} {v}" for k, v in res.config.get("search", {}).items())
        + ".",
        f"- {res.repeats} repeats per lookup and mode; total run {res.total_seconds:.0f} s.",
    ]
    if res.store.get("revisions"):
        lines += revisions_table(res.store["revisions"])
    lines += ["", "Everything, each lookup's top 10 included, is in `results.json`."]
    return "\n".join(lines) + "\n"


# -- main --------------------------------------------------------------------------------


def wait_reindexed(runtime: Runtime, seconds: float = 3600.0) -> int:
    """A store built with an older text format is re-indexed when opened: wait for that, so
    every lookup runs on one index. The format measured."""
    started = time.monotonic()
    while (row := status_row(ActorReads(runtime))).text_format < TEXT_FORMAT:
        if time.monotonic() - started > seconds:
            raise SystemExit(f"retrieval benchmark: re-index not done after {seconds:.0f} s")
        note(
            f"re-indexing the store (text format {row.text_format} -> {TEXT_FORMAT}): "
            f"{row.reindex.get('done', 0)}/{row.reindex.get('total', '?')} sources"
        )
        time.sleep(10)
    return row.text_format


def store_sources(runtime: Runtime) -> tuple[int, dict[str, int], set[tuple[str, str]]]:
    """Records, records per project and the (project, source) pairs of the store."""
    ws = runtime.resolve("", create=False)
    reader = runtime.workspace(ws).reader()
    try:
        records = reader.fetch(reader.ids()).values()
    finally:
        reader.close()
    projects: dict[str, int] = {}
    for rec in records:
        projects[rec.project] = projects.get(rec.project, 0) + 1
    return len(records), dict(sorted(projects.items())), {(r.project, r.source) for r in records}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Search quality per mode on a fixed query set: top-1, recall@5, MRR@10, "
        "gold visible at 1,200 and 4,000 characters, search p50."
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        required=True,
        metavar="PATH",
        help="data dir with the corpus ingested, one project per corpus folder (a copy: "
        "this process opens it)",
    )
    parser.add_argument(
        "--queries",
        type=Path,
        default=DEFAULT_QUERIES,
        help="query file (default: benchmark/retrieval.json)",
    )
    parser.add_argument(
        "--corpus",
        type=Path,
        default=DEFAULT_CORPUS,
        help="the corpus the data dir holds, for its revisions in the README; not read "
        "otherwise (default: ../shared/corpus beside the repository)",
    )
    parser.add_argument(
        "--repeats", type=int, default=3, help="searches per lookup and mode (default: 3)"
    )
    parser.add_argument(
        "--by-chunk",
        action="store_true",
        help="search with by_chunk=True (every chunk its own hit, the list before issue 32)",
    )
    parser.add_argument(
        "--publish",
        action="store_true",
        help="write retrieval-<timestamp>/ with README.md and results.json under --out",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=PUBLISHED,
        help="with --publish: the folder for retrieval-<timestamp>/ (default: benchmark/published)",
    )
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats: must be at least 1")
    folder = args.data_dir.expanduser()
    if not (folder / "workspaces").is_dir():
        parser.error(f"--data-dir: {folder} holds no workspaces/; give a data dir with the corpus")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    queries_path: Path = args.queries.expanduser().resolve()
    lookups = load_queries(queries_path)
    started_at = common.utc_now()
    with common.data_dir(args.data_dir, "imprint-bench-retrieval-") as data_dir:
        configure_logging(data_dir, level="warning", to_file=True)
        config = load_config(data_dir)
        res = Results(
            started_at=started_at,
            command=[sys.executable, *sys.argv],
            machine=common.machine(
                PACKAGES, cpu=common.cpu_name(), revision=common.imprint_revision()
            ),
            config={
                "reader_pool_size": config.readers.pool_size,
                "embedding_threads": config.embedding.threads,
                "chunk_chars": config.ingest.chunk_chars,
                "search": config.search.model_dump(),
            },
            store={"path": str(data_dir)},
            queries={
                "path": str(common.relative(queries_path)),
                "sha256": hashlib.sha256(queries_path.read_bytes()).hexdigest(),
                "lookups": len(lookups),
                **{h: sum(lk.half == h for lk in lookups) for h in HALVES},
            },
            method={
                "search": f"search_rows(ActorReads(runtime), query, limit={LIMIT}, mode=...), "
                "no filters; modes rotate per lookup; untimed warm-up first",
                "hit": "a result whose (project, source) is a gold pair",
                "visible": "format_search(rows, max_chars) shows a gold pair in a block header",
                "p50": "median over lookups of each lookup's median search_rows ms",
                "by_chunk": str(args.by_chunk),
            },
            repeats=args.repeats,
        )
        runtime = Runtime(data_dir, config).start()
        try:
            records, projects, pairs = store_sources(runtime)
            missing = [f"{lk.id}: {g}" for lk in lookups for g in lk.gold if g not in pairs]
            if missing:
                raise SystemExit(
                    "retrieval benchmark: gold sources not in the store (is the corpus "
                    "ingested one project per folder?):\n  " + "\n  ".join(missing)
                )
            res.store.update(records=records, projects=projects)
            res.store["text_format"] = wait_reindexed(runtime)
            res.store["corpus"] = str(args.corpus.expanduser().resolve())
            res.store["revisions"] = common.readme_revisions(args.corpus.expanduser().resolve())
            note(f"store: {records} records; {len(lookups)} lookups x {len(MODES)} modes")
            res.lookups = run_lookups(runtime, lookups, args.repeats, args.by_chunk)
        finally:
            runtime.stop()
    res.figures = all_figures(res.lookups)
    res.total_seconds = common.elapsed()
    common.conclude(res, table, readme if args.publish else None, args.out, "retrieval")
    return 0


if __name__ == "__main__":
    sys.exit(main())
