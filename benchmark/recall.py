"""recall: a multi-part lookup as the separate tool calls a client would make, against one
`recall` with the equivalent plan.

Run from the repository root (`benchmark/runtime.py` is the command line; `--llm` runs
`benchmark/recall_llm.py` instead):

    .venv/bin/python -m benchmark.runtime recall [--corpus ../shared/corpus]
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
     separate calls returned in all, clamped to 1,200-12,000;
   - recall @1200, @8000, @12000: the budget sweep (with @4000, the bounds and the default
     of ADR 0058's range), run after @matched.
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
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client

from benchmark import _common as common
from benchmark._common import REPO, Counter, note, ratio, revisions_table
from benchmark._recall import (
    PACKAGES,
    PROJECT,
    Call,
    CallResult,
    Lookup,
    RecallRun,
    Session,
    Setup,
    evidence_text,
    prepare_store,
    recall_config,
    run_fields,
    step_problems,
    visible,
)
from imprint.actors.lifecycle import Runtime
from imprint.config import load_config
from imprint.logs import configure_logging
from imprint.reads.search import MAX_CHARS_RANGE
from imprint.server import build_server

DEFAULT_BUDGET = 4000
SWEEP = (1200, 8000, 12000)  # with the default, the budgets every run reports


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
    sweep: dict[str, Variant] = field(default_factory=dict)  # "1200", "8000", "12000"


@dataclass
class Totals:
    round_trips: int
    tokens: int
    chars: int
    gold_visible: int
    server_seconds: float


@dataclass
class Results(RecallRun):
    repeats: int
    lookups: list[LookupResult] = field(default_factory=list)
    totals: dict[str, Totals] = field(default_factory=dict)
    gold_total: int = 0
    total_seconds: float = 0.0


async def run_variant(
    session: Session, name: str, calls: Sequence[Call], gold: Sequence[str], repeats: int
) -> Variant:
    """The calls one after another, `repeats` times; each call's text from the first repeat."""
    results: list[CallResult] = []
    sums = [0.0] * repeats
    for call in calls:
        record: CallResult | None = None
        for r in range(repeats):
            got = await session.result(call.tool, call.args)
            sums[r] += got.seconds[0]
            if record is None:
                record = got
                continue
            if got.text != record.text:
                record.identical_across_repeats = False
            record.seconds.append(got.seconds[0])
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
        server_seconds=statistics.median(sums),
        server_seconds_samples=sums,
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
                separate = await run_variant(
                    session, "separate", lookup.calls, lookup.gold, repeats
                )
                recall = await run_variant(
                    session, "recall", [recall_call(lookup, None)], lookup.gold, repeats
                )
            else:
                recall = await run_variant(
                    session, "recall", [recall_call(lookup, None)], lookup.gold, repeats
                )
                separate = await run_variant(
                    session, "separate", lookup.calls, lookup.gold, repeats
                )
            recall.max_chars = DEFAULT_BUDGET
            budget = max(low, min(high, separate.chars))
            matched = await run_variant(
                session, "recall_matched", [recall_call(lookup, budget)], lookup.gold, repeats
            )
            matched.max_chars = budget
            sweep: dict[str, Variant] = {}
            for chars in SWEEP:
                v = await run_variant(
                    session, f"recall_{chars}", [recall_call(lookup, chars)], lookup.gold, repeats
                )
                v.max_chars = chars
                sweep[str(chars)] = v
            for v in (separate, recall, matched, *sweep.values()):
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
                    sweep=sweep,
                )
            )
    return out


def totals(results: Sequence[LookupResult]) -> dict[str, Totals]:
    out = {}
    for key in ("separate", "recall", "matched", *(str(c) for c in SWEEP)):
        vs: list[Variant] = [r.sweep[key] if key.isdigit() else getattr(r, key) for r in results]
        out[key] = Totals(
            round_trips=sum(v.round_trips for v in vs),
            tokens=sum(v.tokens for v in vs),
            chars=sum(v.chars for v in vs),
            gold_visible=sum(len(v.gold_visible) for v in vs),
            server_seconds=sum(v.server_seconds for v in vs),
        )
    return out


# -- output ------------------------------------------------------------------------------


def _row(label: str, v: Variant, gold: int) -> str:
    return (
        f"  {label:<26}{v.round_trips:>6}{v.tokens:>9,}{f'{len(v.gold_visible)}/{gold}':>7}"
        f"{v.server_seconds * 1000:>11.0f}{v.chars:>9,}"
    )


def table(res: Results) -> str:
    m = res.machine
    lines = [
        common.title(
            res,
            "recall",
            f", {m['platform']}; recall step timeout {res.config['recall_step_timeout_sec']} s; "
            f"median of {res.repeats} repeats",
        ),
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
        f"{ratio(rc.round_trips, s.round_trips):>5}  {mt.round_trips:>16}  "
        f"{ratio(mt.round_trips, s.round_trips):>5}",
        f"  caller tokens            {s.tokens:>9,}  {rc.tokens:>12,}  "
        f"{ratio(rc.tokens, s.tokens):>5}  {mt.tokens:>16,}  {ratio(mt.tokens, s.tokens):>5}",
        f"  response chars           {s.chars:>9,}  {rc.chars:>12,}  "
        f"{ratio(rc.chars, s.chars):>5}  {mt.chars:>16,}  {ratio(mt.chars, s.chars):>5}",
        f"  gold sources visible     {f'{s.gold_visible}/{gt}':>9}  "
        f"{f'{rc.gold_visible}/{gt}':>12}  {ratio(rc.gold_visible, s.gold_visible):>5}  "
        f"{f'{mt.gold_visible}/{gt}':>16}  {ratio(mt.gold_visible, s.gold_visible):>5}",
        f"  server time, s           {s.server_seconds:>9.2f}  {rc.server_seconds:>12.2f}  "
        f"{ratio(rc.server_seconds, s.server_seconds):>5}  {mt.server_seconds:>16.2f}  "
        f"{ratio(mt.server_seconds, s.server_seconds):>5}",
        "",
        *sweep_lines(res),
        "",
        f"total {res.total_seconds:.0f} s (ingest {res.data_dir['ingest_seconds']:.1f} s); "
        f"load average (1 min) {m['loadavg_start'][0]:.2f} at start, "
        f"{m['loadavg_end'][0]:.2f} at end (other work on the machine skews server time)",
    ]
    return "\n".join(lines)


def _budgets(res: Results) -> list[tuple[str, Totals]]:
    t = res.totals
    rows = [(str(c), t[str(c)]) for c in SWEEP if str(c) in t]
    rows.append((str(DEFAULT_BUDGET), t["recall"]))
    return sorted(rows, key=lambda r: int(r[0]))


def sweep_lines(res: Results) -> list[str]:
    """Recall at each budget against the separate calls: chars, tokens, gold visible."""
    s = res.totals["separate"]
    gt = res.gold_total
    lines = [
        f"budget sweep       chars  ratio    tokens  ratio    gold   (separate: {s.chars:,} "
        f"chars, {s.tokens:,} tokens, {s.gold_visible}/{gt} gold)"
    ]
    for chars, v in _budgets(res):
        lines.append(
            f"  recall @{chars:<6}{v.chars:>9,}  {ratio(v.chars, s.chars):>5}  {v.tokens:>8,}  "
            f"{ratio(v.tokens, s.tokens):>5}  {f'{v.gold_visible}/{gt}':>6}"
        )
    return lines


def readme(res: Results, command: str) -> str:
    t = res.totals
    s, rc, mt = t["separate"], t["recall"], t["matched"]
    gt = res.gold_total
    m = res.machine

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
        f"{ratio(rc.round_trips, s.round_trips)} | {mt.round_trips} | "
        f"{ratio(mt.round_trips, s.round_trips)} |",
        f"| caller tokens | {s.tokens:,} | {rc.tokens:,} | {ratio(rc.tokens, s.tokens)} | "
        f"{mt.tokens:,} | {ratio(mt.tokens, s.tokens)} |",
        f"| response characters | {s.chars:,} | {rc.chars:,} | {ratio(rc.chars, s.chars)} | "
        f"{mt.chars:,} | {ratio(mt.chars, s.chars)} |",
        f"| gold sources visible | {s.gold_visible}/{gt} | {rc.gold_visible}/{gt} | "
        f"{ratio(rc.gold_visible, s.gold_visible)} | {mt.gold_visible}/{gt} | "
        f"{ratio(mt.gold_visible, s.gold_visible)} |",
        f"| server time, s | {s.server_seconds:.2f} | {rc.server_seconds:.2f} | "
        f"{ratio(rc.server_seconds, s.server_seconds)} | {mt.server_seconds:.2f} | "
        f"{ratio(mt.server_seconds, s.server_seconds)} |",
        "",
        "## Budget sweep",
        "",
        "| | characters | ratio | caller tokens | ratio | gold visible |",
        "|---|---:|---:|---:|---:|---:|",
        f"| separate calls | {s.chars:,} | 1.00 | {s.tokens:,} | 1.00 | {s.gold_visible}/{gt} |",
        *(
            f"| recall @{c} | {v.chars:,} | {ratio(v.chars, s.chars)} | {v.tokens:,} | "
            f"{ratio(v.tokens, s.tokens)} | {v.gold_visible}/{gt} |"
            for c, v in _budgets(res)
        ),
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
        *revisions_table(revs),
        "",
        "Everything, the response texts included, is in `results.json`.",
    ]
    mismatch = res.corpus.get("revision_mismatches")
    if mismatch:
        lines += ["", f"Revision mismatches against the corpus README: {mismatch}"]
    return "\n".join(lines) + "\n"


# -- run ---------------------------------------------------------------------------------


def run(args: argparse.Namespace, setup: Setup, data_dir: Path) -> int:
    """The comparison on `data_dir` (ingested into, facts added); prints the tables and
    publishes the run under `args.out`."""
    configure_logging(data_dir, level="warning", to_file=True)
    config = load_config(data_dir)
    count = Counter()
    res = Results(
        started_at=setup.started_at,
        command=[sys.executable, *sys.argv],
        machine=common.machine(PACKAGES),
        tokenizer=count.name,
        config={**recall_config(config), "chunk_chars": config.ingest.chunk_chars},
        **run_fields(setup, data_dir, args.data_dir is not None),
        method={
            "client": "mcp.client.Client over build_server(runtime, cwd), in memory; "
            "one call_tool per round trip; one untimed search and recall first",
            "separate": "the lookup's calls in order, one round trip each",
            "recall": f"recall(question, plan) at the default max_chars {DEFAULT_BUDGET}",
            "recall_matched": "recall(question, plan, max_chars=M), M the characters "
            "the separate calls returned, clamped to 1200-12000",
            "order": "separate then recall on odd lookups, recall then separate on even "
            "ones; recall @matched, then the sweep",
            "sweep": "recall(question, plan, max_chars=B) for B in 1200, 8000, 12000",
            "tokens": "arguments JSON + result text, tokenizer above",
            "gold": "gold path appears in the text, not inside a longer path",
            "server_time": "perf_counter around call_tool in the client, summed per "
            "lookup, median over repeats",
        },
        repeats=args.repeats,
    )
    runtime = Runtime(data_dir, config).start()
    try:
        res.data_dir.update(prepare_store(runtime, setup.corpus, setup.spec.facts))
        res.lookups = anyio.run(run_lookups, runtime, setup.spec.lookups, count, args.repeats)
    finally:
        runtime.stop()
    res.totals = totals(res.lookups)
    res.gold_total = sum(len(r.gold) for r in res.lookups)
    res.total_seconds = common.elapsed()
    common.conclude(res, table, readme, args.out, "recall")
    return 0
