"""recall --llm's results and how they read: the records, the stdout table and the figures
of the published README, whose text is `templates/recall_llm.md` (`benchmark/recall_llm.py`
measures; this module only renders)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

from benchmark._common import median, ratio, revisions_table, title
from benchmark._recall import PROJECT, CallResult, RecallRun

# Markdown, not HTML: nothing to escape; block tags take their line with them.
_TEMPLATES = Environment(
    loader=PackageLoader("benchmark", "templates"),
    autoescape=False,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)

LLM_MODES = ("intent", "plan")  # intent-only (plan=None: the model plans, then answers);
# plan+answer (the caller's plan: the model only answers)
LLM_STATES = ("cold", "warm")
MODE_LABEL = {"intent": "intent-only", "plan": "plan+answer"}
ANSWERED = "answered"
Getter = Callable[[dict[str, Any]], Any]  # a figure from one mode/state's summary


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
class LlmResults(RecallRun):
    model: dict[str, Any]
    warmup: dict[str, Any] = field(default_factory=dict)
    lookups: list[LlmLookup] = field(default_factory=list)
    summary: dict[str, dict[str, Any]] = field(default_factory=dict)
    gold_total: int = 0
    total_seconds: float = 0.0
    checks: dict[str, Any] = field(default_factory=dict)


def check_lines(res: LlmResults) -> list[str]:
    """Issue 11's model-path checks, one line each."""
    c = res.checks
    if not c:
        return []
    est = c.get("estimates", {})
    pc = c.get("prompt_cache", {})
    growth = c.get("rss_growth_after_50_mib")
    return [
        f"- RSS: {fmt(c.get('rss_before_model_mib'))} MiB before the model loaded; after 50 "
        f"recalls {fmt(c.get('rss_after_50_mib'))} MiB (+{fmt(growth)} MiB), at most "
        f"{fmt(c.get('rss_max_mib'))} MiB (+{fmt(c.get('rss_max_growth_mib'))} MiB); the "
        f"model file is {fmt(c.get('model_mib'), 1)} MiB, so the growth limit is "
        f"{fmt(c.get('rss_limit_mib'), 1)} MiB: "
        + ("met" if growth is not None and growth <= c["rss_limit_mib"] else "NOT met")
        + (
            f" (of the growth, {fmt(c['rss_file_growth_after_50_mib'])} MiB file-backed: the "
            f"mapped model; {fmt(c['rss_anon_growth_after_50_mib'])} MiB anonymous: KV cache, "
            "compute buffers, prompt cache, heap)"
            if c.get("rss_anon_growth_after_50_mib") is not None
            else ""
        ),
        f"- Planning, median ms to the first piece: cold {fmt(c['plan_first_piece_ms']['cold'])}, "
        f"warm (pinned prefix) {fmt(c['plan_first_piece_ms']['warm'])}: "
        f"{fmt(c.get('plan_cold_over_warm'), 2)}x "
        + ("(>= 2x: met)" if (c.get("plan_cold_over_warm") or 0) >= 2 else "(< 2x: NOT met)"),
        f"- Prompt cache: {pc.get('hits')} hits, {pc.get('misses')} misses, "
        f"{pc.get('reused_tokens')} prefix tokens restored; {pc.get('entries_now')} entries, "
        f"{fmt((pc.get('bytes_now') or 0) / 2**20, 1)} MiB of "
        f"{fmt((pc.get('capacity_bytes') or 0) / 2**20)} MiB (every byte counted).",
        f"- Cost estimates: {est.get('with_estimate')} of {est.get('calls')} recall model "
        f"calls had one; median actual/estimated ms to the first piece "
        f"{fmt(est.get('median_actual_over_estimate'), 2)}; skipped as too costly: "
        f"{est.get('skipped_cost', {}).get('recall.plan')} plans, "
        f"{est.get('skipped_cost', {}).get('recall.answer')} answers.",
    ]


def _reused(run: LlmRecall, kind: str) -> str:
    calls = [c for c in run.model_calls if c["kind"] == kind]
    if not calls:
        return "-"
    return ",".join(f"{c['reused_tokens']}/{c['prompt_tokens']}" for c in calls)


def _short(outcome: str, width: int = 44) -> str:
    return outcome if len(outcome) <= width else outcome[: width - 1] + "…"


def fmt(v: float | None, digits: int = 0) -> str:
    """A number with thousands separators, or "-" for none."""
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
    return fmt(v, 2)


def _totals(res: LlmResults, mode: str, timeout: str) -> list[str]:
    """The stdout table's totals of one mode: cold, warm and (for numbers) warm/cold."""
    cold, warm = res.summary[f"{mode}/cold"], res.summary[f"{mode}/warm"]
    n, gt = len(res.lookups), res.gold_total

    def row(label: str, get: Getter) -> str:
        a, b = get(cold), get(warm)
        rr = "" if isinstance(a, str) else ratio(b, a)
        fa, fb = (v if isinstance(v, str) else fmt(v) for v in (a, b))
        return f"    {label:<34}{fa:>12} {fb:>12} {rr:>10}"

    def reuse(k: dict[str, Any]) -> str:
        return f"{fmt(k['median_reused_tokens'])}/{fmt(k['median_prompt_tokens'])}"

    def first_piece(k: dict[str, Any]) -> Any:
        return k["median_first_piece_ms"]

    def calls(kind: str, get: Getter) -> Getter:
        return lambda v: get(v[f"{kind}_calls"])

    rows: list[tuple[str, Getter]] = []
    if mode == "intent":
        rows.append(("median plan ms", lambda v: v["median_plan_ms"]))
    rows += [
        ("median answer ms", lambda v: v["median_answer_ms"]),
        ("median wall ms", lambda v: v["median_wall_ms"]),
        ("max wall ms", lambda v: v["max_wall_ms"]),
        (f"answered within {timeout} s (usable)", lambda v: f"{v['answered']}/{n}"),
        (f"wall time within {timeout} s", lambda v: f"{v['wall_within_timeout']}/{n}"),
    ]
    for kind in ("plan", "answer") if mode == "intent" else ("answer",):
        rows += [
            (f"{kind} prompt: median reused/tokens", calls(kind, reuse)),
            (f"{kind}: median ms to first piece", calls(kind, first_piece)),
        ]
    rows += [
        ("prompt tokens reused, % of all", lambda v: f"{fmt(v['reused_pct'], 1)}%"),
        ("median load average (1 min)", lambda v: f"{v['median_loadavg_1min']:.2f}"),
        ("caller tokens (sum)", lambda v: v["tokens"]),
        ("gold sources visible", lambda v: f"{v['gold_visible']}/{gt}"),
    ]
    return [
        f"  {MODE_LABEL[mode]}",
        *(row(label, get) for label, get in rows),
        f"    deterministic recall, same lookups: {cold['reference_tokens']:,} tokens, "
        f"{cold['reference_gold_visible']}/{gt} gold visible",
        *(
            f"    {state} fallback x{k}: {outcome}"
            for state, v in (("cold", cold), ("warm", warm))
            for outcome, k in sorted(v["fallbacks"].items())
        ),
    ]


def llm_table(res: LlmResults) -> str:
    m, md, c = res.machine, res.model, res.config
    timeout = c["recall_llm_timeout_sec"]
    lines = [
        title(res, "recall --llm", f", {m['cpu']}; {m['platform']}"),
        f"model {md['file']} ({md['bytes']:,} bytes), llama.cpp {md['n_threads']} threads, "
        f"n_ctx {md['n_ctx']}, loaded in {fmt(md.get('load_seconds'), 2)} s; one deadline "
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
                    f"  {label:<20}{fmt(r.plan_ms):>9}{fmt(r.answer_ms):>11}{r.wall_ms:>9,.0f}"
                    f"{_reused(r, 'plan'):>12}{_reused(r, 'answer'):>14}{r.tokens:>8,}"
                    f"{f'{len(r.gold_visible)}/{g}':>6}{r.loadavg_1min:>6.2f}  {_short(r.outcome)}"
                )
    n = len(res.lookups)
    lines += ["", f"totals over {n} lookups{'':<22}cold          warm  warm/cold"]
    for mode in LLM_MODES:
        lines += _totals(res, mode, f"{timeout:g}")
    lines += [
        "",
        f"total {res.total_seconds:.0f} s; load average (1 min) "
        f"{m['loadavg_start'][0]:.2f} at start, {m['loadavg_cold_start'][0]:.2f} before cold, "
        f"{m['loadavg_warm_start'][0]:.2f} before warm, {m['loadavg_end'][0]:.2f} at end "
        "(other work on the machine skews every latency)",
    ]
    if res.checks:
        lines += ["", "issue 11 checks", *check_lines(res)]
    return "\n".join(lines)


def _per_mode(
    s: dict[str, dict[str, Any]],
    get: Callable[[dict[str, Any]], Any],
    show: Callable[[Any], str] = fmt,
    compare: bool = True,
) -> list[str]:
    """One summary row's cells: per mode cold, warm and warm/cold (or an empty cell)."""
    out = []
    for mode in LLM_MODES:
        a, b = get(s[f"{mode}/cold"]), get(s[f"{mode}/warm"])
        out += [show(a), show(b), ratio(b, a) if compare else ""]
    return out


def _summary_rows(res: LlmResults, timeout: str) -> list[tuple[str, list[str]]]:
    s, n, gt = res.summary, len(res.lookups), res.gold_total

    def key(name: str) -> Callable[[dict[str, Any]], Any]:
        return lambda row: row.get(name)

    def reuse(kind: str) -> list[str]:
        def shown(k: dict[str, Any]) -> str:
            if not k["calls"]:
                return "-"
            return f"{fmt(k['median_reused_tokens'])} / {fmt(k['median_prompt_tokens'])}"

        return _per_mode(s, key(f"{kind}_calls"), shown, compare=False)

    def first_piece(kind: str) -> list[str]:
        return _per_mode(s, lambda row: row[f"{kind}_calls"]["median_first_piece_ms"])

    return [
        (
            "median plan ms (recall.model.plan run_ms)",
            [*_per_mode(s, key("median_plan_ms"))[:3], "-", "-", ""],
        ),
        ("median answer ms (recall.model.answer run_ms)", _per_mode(s, key("median_answer_ms"))),
        ("median wall ms (call_tool)", _per_mode(s, key("median_wall_ms"))),
        ("max wall ms", _per_mode(s, key("max_wall_ms"))),
        (
            f"usable answer within {timeout} s",
            _per_mode(s, key("answered"), lambda v: f"{v}/{n}", False),
        ),
        (
            f"wall time within {timeout} s",
            _per_mode(s, key("wall_within_timeout"), lambda v: f"{v}/{n}", False),
        ),
        ("plan prompt: median tokens reused / prompt tokens", reuse("plan")),
        ("plan: median ms to first piece", [*first_piece("plan")[:3], "-", "-", ""]),
        ("answer prompt: median tokens reused / prompt tokens", reuse("answer")),
        ("answer: median ms to first piece", first_piece("answer")),
        (
            "prompt tokens reused, % of all (plan and answer)",
            _per_mode(s, key("reused_pct"), lambda v: f"{fmt(v, 1)}%", False),
        ),
        (
            "median load average (1 min) before a recall",
            _per_mode(s, key("median_loadavg_1min"), _f2, False),
        ),
        ("caller tokens (sum)", _per_mode(s, key("tokens"), lambda v: f"{v:,}")),
        ("gold sources visible", _per_mode(s, key("gold_visible"), lambda v: f"{v}/{gt}", False)),
    ]


def llm_readme(res: LlmResults, command: str) -> str:
    m, md, c, s = res.machine, res.model, res.config, res.summary
    timeout = f"{c['recall_llm_timeout_sec']:g}"
    gt = res.gold_total
    page = _TEMPLATES.get_template("recall_llm.md")
    return page.render(
        modes=LLM_MODES,
        label=MODE_LABEL,
        fmt=fmt,
        ratio=ratio,
        reused=_reused,
        res=res,
        m=m,
        md=md,
        c=c,
        n=len(res.lookups),
        timeout=timeout,
        project=PROJECT,
        command=command,
        cache=_cache_text(md["prompt_cache"]) if md.get("prompt_cache") else "",
        load_seconds=fmt(md.get("load_seconds"), 2),
        summary_rows=_summary_rows(res, timeout),
        reference="; ".join(
            f"{MODE_LABEL[mode]} {s[f'{mode}/cold']['reference_tokens']:,} caller tokens, "
            f"{s[f'{mode}/cold']['reference_gold_visible']}/{gt} gold visible"
            for mode in LLM_MODES
        ),
        fallbacks=[
            f"- {MODE_LABEL[mode]} {state}: {k} x `{outcome}`"
            for mode in LLM_MODES
            for state in LLM_STATES
            for outcome, k in sorted(s[f"{mode}/{state}"]["fallbacks"].items())
        ],
        checks=check_lines(res),
        best=_best_warm_plan(res),
        pc=_prompt_cache(res) if md.get("prompt_cache") else {},
        loadavg=(
            f"{m['loadavg_start'][0]:.2f} at start, "
            f"{m['loadavg_cold_start'][0]:.2f} before the cold pass, "
            f"{m['loadavg_warm_start'][0]:.2f} before the warm pass, "
            f"{m['loadavg_end'][0]:.2f} at end"
        ),
        code="\n".join(_code_line(m.get("revision"))),
        revisions=revisions_table(res.corpus["revisions"]),
    )


def _best_warm_plan(res: LlmResults) -> dict[str, Any] | None:
    """The warm intent-only plan call that reused the most prompt tokens."""
    calls = [
        c
        for lk in res.lookups
        for r in lk.runs
        if r.mode == "intent" and r.state == "warm"
        for c in r.model_calls
        if c["kind"] == "plan"
    ]
    return max(calls, key=lambda c: c["reused_tokens"] or 0, default=None)


def _prompt_cache(res: LlmResults) -> dict[str, Any]:
    """How the prompt cache was used: restores, its largest size, the cost of a save."""
    s = res.summary
    calls = [c for lk in res.lookups for r in lk.runs for c in r.model_calls]
    saves = [c["after_last_piece_ms"] for c in calls if c.get("after_last_piece_ms") is not None]
    counted = max((s[k]["max_cache_counted_bytes"] for k in s), default=0)
    scores = max((s[k]["max_cache_scores_bytes"] for k in s), default=0)
    return {
        "from_cache": sum(s[k]["reused_from_cache"] for k in s),
        "calls": len(calls),
        "entries": max((s[k]["max_cache_entries"] for k in s), default=0),
        "counted_mib": f"{counted / 2**20:,.0f}",
        "scores_mib": f"{scores / 2**20:,.1f}",
        "save_ms": fmt(median(saves)),
    }
