"""archive: how fast `imprint export` and `imprint import` are, and how close import runs to
its bound, the local embedding model (issue 30).

Run from the repository root:

    .venv/bin/python -m benchmark.archive [--sizes 10000,100000] [--import-sizes 10000]
                                          [--real-import 1000]
                                          [--embed-sample 256] [--publish [--out FOLDER]]
    .venv/bin/python -m benchmark.archive roundtrip --data-dir PATH
                                          [--queries benchmark/retrieval.json]

Method (speed)
--------------
1. Stores: for each size N, a fresh data dir filled through the store layer (the writer's
   `Write`, as ingest sends it) with GENERATED records and GENERATED vectors: 10 % memories
   (a supersede link for every 50th), 90 % chunks of 8-chunk sources, a fact per 100 records;
   texts of about 600 characters built from a fixed word list, vectors seeded random unit
   vectors (no model runs to build a store: a 100k store would take hours to embed here).
2. Export: `export_lines` of the whole workspace into a file, twice (the two must be
   byte-identical); seconds, lines, MB, records/s. The same code as `imprint export FILE`.
3. Import overhead (at `--import-sizes`): `read_export` + `import_file` of that file into an
   empty data dir whose
   runtime embeds with a stand-in (seeded vectors, about 20 us a text): everything an import
   does except the model: reading and checking the file, the reads that find what is already
   there, the writer's journal, SQLite, FTS5 and Chroma. `embed s` is the stand-in's time.
4. Embedding rate: the real model (`Embedder.from_config`, the default config) on the first
   `--embed-sample` texts of the 10k file, as an import batches them: chunks/s. The bound of
   an import of N records is N / that rate; import at N is predicted as overhead + bound.
5. Real import: `--real-import M` records (the first memory and source lines of the smallest
   file up to M records, a file of its own) imported with the real model: total seconds,
   seconds inside `embed`, and the rest; total / embed is how close import runs to the
   embedding bound. The writer applies a batch while the next one is embedded, so the
   overhead of step 3 mostly hides behind the embedding (`predicted` adds it: an upper bound).
Figures are one run each; the load average is recorded beside them (the machine is shared).

Method (roundtrip)
------------------
A data dir with the corpus ingested (`python -m benchmark.snapshot_reads build`) is exported,
the file imported into an empty data dir (real model), and every lookup of the queries file
searched in both (hybrid, semantic, lexical; the search tool's output text), plus kg_query
(all, with ended facts: the rows its tool formats); the count of outputs that differ is the
figure (0 is the claim).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmark import _common as common
from benchmark._common import PUBLISHED, note
from imprint.actors.lifecycle import Runtime
from imprint.config import Config, load_config
from imprint.logs import configure_logging
from imprint.reads.export import export_lines
from imprint.store.embedder import DIMENSIONS, Embedder
from imprint.store.records import Fact, Record, SourceEntry, SupersedeLink, WriteBatch, content_sha
from imprint.types import MemoryId, WorkspaceName
from imprint.writes import Writes
from imprint.writes.gateway import WRITE_TIMEOUT_SEC
from imprint.writes.import_check import read_export
from imprint.writes.imports import ImportReport, import_file

SEED = 20261202
WRITE_BATCH = 512
WORDS = [
    "actor",
    "queue",
    "writer",
    "reader",
    "journal",
    "index",
    "vector",
    "chunk",
    "source",
    "memory",
    "fact",
    "recall",
    "search",
    "budget",
    "deadline",
    "daemon",
    "socket",
    "session",
    "client",
    "server",
    "config",
    "backup",
    "restore",
    "export",
    "import",
    "supersede",
    "project",
    "workspace",
    "token",
    "embed",
    "model",
    "batch",
    "commit",
    "snapshot",
    "retry",
    "timeout",
    "merge",
    "ranking",
    "lexical",
    "semantic",
    "hybrid",
]
WORKSPACE = WorkspaceName("default")


class StandInEmbedder(Embedder):
    """Seeded unit vectors instead of the model: what an import costs without embedding."""

    def __init__(self) -> None:  # no model loaded, on purpose
        self.batch_size, self.threads, self.model_file = 32, 1, Path("stand-in")
        self.seconds = 0.0

    def embed(
        self, texts: Sequence[str], *, starting: Any = None, between: Any = None
    ) -> np.ndarray:
        started = time.perf_counter()
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
            out[i] = np.random.default_rng(seed).standard_normal(DIMENSIONS)
        out /= np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-12, None)
        self.seconds += time.perf_counter() - started
        return out

    def describe(self) -> dict[str, Any]:
        return {"file": "stand-in", "precision": "none", "dimension": DIMENSIONS}


def _text(rng: np.random.Generator, n: int) -> str:
    words = rng.choice(len(WORDS), size=90)
    return f"Record {n}: " + " ".join(WORDS[w] for w in words) + "."


def _records(n_total: int) -> list[tuple[list[Record], SourceEntry | None]]:
    """Generated writes: single memories, and 8-chunk sources with their entries."""
    rng = np.random.default_rng(SEED)
    now = 1_764_633_600.0
    out: list[tuple[list[Record], SourceEntry | None]] = []
    n = 0
    while n < n_total:
        if n % 80 < 8:  # 10 % memories
            text = _text(rng, n)
            rec = Record(
                id=MemoryId(f"mem-{n:07d}"),
                content=text,
                project="bench",
                source_type="memory",
                type="note",
                created_at=now + n,
                content_sha=content_sha(text),
            )
            out.append(([rec], None))
            n += 1
            continue
        name = f"docs/doc-{n:07d}.md"
        chunks = [
            Record(
                id=MemoryId(f"chunk-{n + i:07d}"),
                content=(text := _text(rng, n + i)),
                project="bench",
                source=name,
                source_type="file",
                chunk_index=i,
                chunk_count=8,
                lang="markdown",
                layer="docs",
                created_at=now + n,
                source_mtime=now + n,
                content_sha=content_sha(text),
            )
            for i in range(8)
        ]
        entry = SourceEntry(
            project="bench",
            source=name,
            source_type="file",
            mtime=now + n,
            sha=content_sha(name),
            chunk_count=8,
        )
        out.append((chunks, entry))
        n += 8
    return out


def build_store(data_dir: Path, n_total: int) -> float:
    """A store of about `n_total` generated records, written through the writer with
    stand-in vectors; the seconds it took."""
    started = time.perf_counter()
    stand_in = StandInEmbedder()
    rt = Runtime(data_dir, Config(), embedder=stand_in, reindex=False).start()
    try:
        writes = Writes(rt)
        ws = writes.open("")
        pending: list[Record] = []
        entries: list[SourceEntry] = []
        memories: list[MemoryId] = []

        def flush() -> None:
            if pending:
                batch = WriteBatch(upserts=tuple(pending), set_sources=tuple(entries))
                writes.send(ws, batch, stand_in.embed([r.indexed_text for r in pending])).get(
                    timeout=WRITE_TIMEOUT_SEC
                )
                pending.clear()
                entries.clear()

        for records, entry in _records(n_total):
            pending.extend(records)
            if entry is None:
                memories.append(records[0].id)
            else:
                entries.append(entry)
            if len(pending) >= WRITE_BATCH:
                flush()
        flush()
        links = tuple(
            SupersedeLink(old=memories[i], new=memories[i + 1], at=1_764_700_000.0 + i)
            for i in range(0, len(memories) - 1, 50)
        )
        facts = tuple(
            Fact(
                id=f"f{i:06d}",
                subject=f"service {i % 97}",
                predicate="depends on",
                object=f"component {i}",
                valid_from=1_764_600_000.0 + i,
                ended=1_764_650_000.0 + i if i % 5 == 0 else None,
                source="bench",
            )
            for i in range(n_total // 100)
        )
        writes.write(ws, WriteBatch(supersede=links, add_facts=facts))
    finally:
        rt.stop()
    return time.perf_counter() - started


def time_export(data_dir: Path, target: Path) -> dict[str, Any]:
    started = time.perf_counter()
    with target.open("w", encoding="utf-8") as handle:
        lines = 0
        for line in export_lines(data_dir, [WORKSPACE]):
            handle.write(line)
            lines += 1
    return {
        "seconds": time.perf_counter() - started,
        "lines": lines,
        "bytes": target.stat().st_size,
    }


def run_import(file: Path, data_dir: Path, embedder: Embedder) -> tuple[ImportReport, float]:
    """`read_export` + `import_file` into `data_dir`; the report and the parse seconds."""
    started = time.perf_counter()
    parsed = read_export(file)
    parse = time.perf_counter() - started
    rt = Runtime(data_dir, Config(), embedder=embedder, reindex=False).start()
    try:
        report = import_file(Writes(rt), parsed)
    finally:
        rt.stop()
    report.seconds += parse
    return report, parse


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _head(file: Path, target: Path, records: int) -> None:
    """The file's first memory and source lines up to `records` records (memories and
    chunks; links dropped, facts left out), with a header that counts them."""
    import json

    rows: list[dict[str, Any]] = []
    counts = {"memories": 0, "sources": 0, "chunks": 0, "facts": 0}
    with file.open(encoding="utf-8") as handle:
        next(handle)
        for raw in handle:
            if counts["memories"] + counts["chunks"] >= records:
                break
            data = json.loads(raw)
            if data["line"] == "memory":
                rows.append({**data, "supersedes": [], "superseded_by": None})
                counts["memories"] += 1
            elif data["line"] == "source":
                rows.append(data)
                counts["sources"] += 1
                counts["chunks"] += len(data["chunks"])
    header = {
        "line": "header",
        "format": "imprint-export",
        "version": 2,
        "workspaces": {"default": counts},
    }
    dump = lambda d: json.dumps(d, sort_keys=True, ensure_ascii=False, separators=(",", ":"))  # noqa: E731
    target.write_text("".join(dump(d) + "\n" for d in [header, *rows]), encoding="utf-8")


@dataclass
class Results(common.Run):
    sizes: dict[str, Any] = field(default_factory=dict)
    embed_rate: dict[str, Any] = field(default_factory=dict)
    real_import: dict[str, Any] = field(default_factory=dict)


def speed(args: argparse.Namespace) -> Results:
    res = Results(
        started_at=common.utc_now(),
        command=sys.argv,
        machine=common.machine(["chromadb", "onnxruntime", "numpy"]),
        config={
            "sizes": args.sizes,
            "import_sizes": args.import_sizes,
            "real_import": args.real_import,
            "sample": args.embed_sample,
        },
    )
    work = Path(tempfile.mkdtemp(prefix="imprint-archive-"))
    try:
        files: dict[int, Path] = {}
        for n in args.sizes:
            store, into = work / f"store-{n}", work / f"into-{n}"
            note(f"{n}: building the store (generated records and vectors)")
            built = build_store(store, n)
            file, again = work / f"export-{n}.jsonl", work / f"export-{n}-again.jsonl"
            note(f"{n}: export")
            first = time_export(store, file)
            second = time_export(store, again)
            same = _sha(file) == _sha(again)
            again.unlink()
            res.sizes[str(n)] = {
                "records": read_export(file).records,
                "build_seconds": built,
                "export": first,
                "export_again_seconds": second["seconds"],
                "exports_identical": same,
                "loadavg": os.getloadavg(),
            }
            if n in args.import_sizes:
                note(f"{n}: import, the model replaced by a stand-in")
                report, parse = run_import(file, into, StandInEmbedder())
                back = work / f"back-{n}.jsonl"
                time_export(into, back)
                res.sizes[str(n)]["import_overhead"] = {
                    "seconds": report.seconds,
                    "parse_seconds": parse,
                    "stand_in_embed_seconds": report.embed_seconds,
                    "written": report.written,
                    "reimport_exports_identical": _sha(back) == _sha(file),
                    "loadavg": os.getloadavg(),
                }
            files[n] = file
            shutil.rmtree(store, ignore_errors=True)
            shutil.rmtree(into, ignore_errors=True)
        smallest = files[min(files)]
        note("embedding rate of the real model")
        model = Embedder.from_config(load_config(work).embedding)
        parsed = read_export(smallest)
        texts = [r.content for ws in parsed.workspaces.values() for r in ws.memories] + [
            c.text for ws in parsed.workspaces.values() for s in ws.sources for c in s.chunks
        ]
        sample = texts[: args.embed_sample]
        model.embed(sample[:8])  # warm-up
        started = time.perf_counter()
        model.embed(sample)
        seconds = time.perf_counter() - started
        res.embed_rate = {
            "texts": len(sample),
            "seconds": seconds,
            "per_sec": len(sample) / seconds,
            "loadavg": os.getloadavg(),
        }
        if args.real_import:
            note(f"real import of {args.real_import} records")
            head = work / "head.jsonl"
            _head(smallest, head, args.real_import)
            report, parse = run_import(head, work / "real", model)
            res.real_import = {
                "records": read_export(head).records,
                "seconds": report.seconds,
                "embed_seconds": report.embed_seconds,
                "rest_seconds": report.seconds - report.embed_seconds,
                "parse_seconds": parse,
                "loadavg": os.getloadavg(),
            }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return res


def table(res: Results) -> str:
    rate = res.embed_rate.get("per_sec") or 0.0
    lines = [
        common.title(res, "archive", ""),
        "",
        "| records | export s | export rec/s | MB | identical | import overhead s | "
        "overhead rec/s | embedding bound s | predicted import s | re-export identical | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for n, size in res.sizes.items():
        rec = size["records"]
        exp, imp = size["export"], size.get("import_overhead")
        bound = rec / rate if rate else float("nan")
        cells = (
            [
                f"{imp['seconds']:.1f}",
                f"{rec / imp['seconds']:,.0f}",
                f"{bound:,.0f}",
                f"{bound + imp['seconds']:,.0f}",
                str(imp["reimport_exports_identical"]),
            ]
            if imp
            else ["not run", "-", f"{bound:,.0f}", "-", "-"]
        )
        lines.append(
            f"| {int(n):,} ({rec:,}) | {exp['seconds']:.1f} | {rec / exp['seconds']:,.0f} | "
            f"{exp['bytes'] / 1e6:.1f} | {size['exports_identical']} | {' | '.join(cells)} | "
            f"{size['loadavg'][0]:.1f} |"
        )
    lines += [
        "",
        f"Embedding rate (real model, {res.embed_rate.get('texts')} texts): "
        f"{rate:.1f} texts/s (load {res.embed_rate.get('loadavg', [0])[0]:.1f})",
    ]
    real = res.real_import
    if real:
        times = {k: real[k] for k in ("seconds", "embed_seconds", "rest_seconds")}
        share = times["seconds"] / times["embed_seconds"]
        said = "{seconds:.1f} s, of which {embed_seconds:.1f} s embedding and {rest_seconds:.1f} s"
        lines.append(
            f"Real import of {real['records']:,} records: {said.format(**times)} the rest "
            f"({share:.2f}x the embedding time; load {real['loadavg'][0]:.1f})"
        )
    return "\n".join(lines)


def readme(res: Results, command: str) -> str:
    doc = (__doc__ or "").split("Method (speed)", 1)[1].split("Method (roundtrip)", 1)[0]
    return "\n".join(
        [
            f"# archive benchmark, {res.started_at}",
            "",
            f"Command: `{command}` at {common.imprint_revision()['commit'][:12]}",
            "",
            table(res),
            "",
            "## Method",
            doc.strip().lstrip("-").strip(),
            "",
            f"Machine: {res.machine['cpus']} CPUs ({common.cpu_name()}), load average at start "
            f"{res.machine['loadavg_start'][0]:.1f}, at end {res.machine['loadavg_end'][0]:.1f} "
            "(a machine shared with other work: the figures move with it).",
            "",
        ]
    )


def roundtrip(args: argparse.Namespace) -> int:
    """Export the ingested corpus, import it into an empty data dir, compare the answers."""
    from imprint.reads.facts import KgQueryArgs, fact_rows
    from imprint.reads.gateway import ActorReads
    from imprint.reads.search import SearchArgs, search_text

    _raw, lookups, problems = common.read_lookups(args.queries)
    common.refuse("archive", args.queries, problems)
    source = args.data_dir.expanduser().resolve()
    work = Path(tempfile.mkdtemp(prefix="imprint-roundtrip-"))
    try:
        file = work / "corpus.jsonl"
        started = time.perf_counter()
        exported = time_export(source, file)
        note(f"exported {exported['lines']} lines in {time.perf_counter() - started:.1f} s")
        target = work / "data"
        model = Embedder.from_config(load_config(source).embedding)
        report, _parse = run_import(file, target, model)
        note(report.line())
        note(f"import: {report.seconds:.1f} s, of which {report.embed_seconds:.1f} s embedding")

        def answers(data: Path) -> list[str]:
            rt = Runtime(data, load_config(data), embedder=model, reindex=False).start()
            try:
                reads = ActorReads(rt)
                out = [
                    search_text(reads, SearchArgs(query=item["query"], mode=mode))
                    for _lid, item in lookups
                    for mode in ("hybrid", "semantic", "lexical")
                ]
                ws = reads.open("")
                for kg in (KgQueryArgs(), KgQueryArgs(include_ended=True)):
                    out.append(repr(fact_rows(reads, ws, kg)))  # the rows kg_query formats
                return out
            finally:
                rt.stop()

        before, after = answers(source), answers(target)
        differ = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
        print(
            f"roundtrip: {len(lookups)} lookups x 3 modes + 2 kg_query: {len(before)} outputs, "
            f"{len(differ)} differ; import {report.seconds:.1f} s ({report.embed_seconds:.1f} s "
            f"embedding), {report.written} written; load {os.getloadavg()[0]:.1f}"
        )
        return 1 if differ else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmark.archive", description=__doc__)
    parser.add_argument("cmd", nargs="?", choices=["speed", "roundtrip"], default="speed")
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--import-sizes", default="10000", help="sizes also imported")
    parser.add_argument("--real-import", type=int, default=1000)
    parser.add_argument("--embed-sample", type=int, default=256)
    parser.add_argument("--data-dir", type=Path)
    parser.add_argument("--queries", type=Path, default=common.REPO / "benchmark/retrieval.json")
    parser.add_argument("--publish", action="store_true")
    parser.add_argument("--out", type=Path, default=PUBLISHED)
    args = parser.parse_args(argv)
    configure_logging(None, level="warning", to_file=False)
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    if args.cmd == "roundtrip":
        if args.data_dir is None:
            parser.error("roundtrip: --data-dir PATH (a data dir with the corpus ingested)")
        return roundtrip(args)
    args.sizes = [int(s) for s in str(args.sizes).split(",") if s]
    args.import_sizes = [int(s) for s in str(args.import_sizes).split(",") if s]
    res = speed(args)
    common.conclude(res, table, readme if args.publish else None, args.out, "archive")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
