"""recall: one round trip for a multi-part question.

With a plan, its steps (reads of the 7 evidence tools) run concurrently under one deadline
and their results merge into one budgeted response. Without a plan and without a model,
recall is exactly the compact search for the question. With the model path on, a local model
plans the steps and condenses the evidence into a cited answer (`imprint.recall.model`); the
baseline search is gathered while it plans, so the evidence is ready when planning gives up.

A caller's deadline is when the answer arrives: the model and the steps work to it less the
tail after their last wait (merge, budget, format, the hand-back to the transport), measured
by every recall (`recall_reserve`), and steps that would not answer in what is left are not
asked. A recall is an interactive call: background work waits for its turn meanwhile.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from imprint.actors.inference import InferenceProxy
from imprint.actors.lifecycle import Runtime
from imprint.actors.read_messages import Projects
from imprint.errors import InputError
from imprint.logs import get_logger
from imprint.providers import is_local
from imprint.reads.deadline import Reserve
from imprint.reads.gateway import Reads
from imprint.reads.layout import Block, Layout, clip, layout_blocks, one_line
from imprint.reads.search import (
    SearchArgs,
    format_search,
    normalize_max_chars,
    search_budget,
    search_rows,
)
from imprint.recall.coordinator import run_plan, start_plan
from imprint.recall.evidence import StepResult, merge
from imprint.recall.model import (
    Answer,
    Planned,
    answer,
    named_ids,
    named_sources,
    plan_steps,
)
from imprint.recall.plan import SearchStep, Step, parse_plan
from imprint.store.lexical import check_query
from imprint.types import Outcome, WorkspaceName

__all__ = [
    "RecallArgs",
    "condensed",
    "format_recall",
    "layout_recall",
    "recall_reserve",
    "recall_text",
]

log = get_logger("imprint.recall")

HINT = "raise max_chars (up to 12000) or narrow the steps"
VERIFY = (
    "verify: the answer is a pointer to the cited evidence, not a fact; read that evidence "
    "(get_memory, file_chunks, or condense=false) before relying on it"
)


def _step_lines(results: list[StepResult], level: int) -> list[str]:
    """The steps' lines, shorter at each level: 0 whole (labels to 160 characters), 1 the tool
    and its count or a shortened error, 2 one line counting what went well and what failed."""
    if level == 0:
        lines = []
        for r in results:
            label = clip(r.label, 160)
            status = r.detail if r.outcome == "ok" else f"{r.outcome}: {r.detail}"
            lines.append(f"step {r.index} {label}: {status}")
        return lines
    if level == 1:
        return [
            f"step {r.index} {r.label.split('(', 1)[0]}: "
            + (r.detail if r.outcome == "ok" else clip(f"{r.outcome}: {r.detail}", 60))
            for r in results
        ]
    ok = sum(r.outcome == "ok" for r in results)
    failed = [str(r.index) for r in results if r.outcome != "ok"]
    line = f"steps: {ok} ok"
    if failed:
        line += f", {len(failed)} failed (step {', '.join(failed)}; raise max_chars for why)"
    return [line]


class RecallArgs(BaseModel):
    """A recall as its caller asks it (the tool, the CLI, the dashboard). `plan` is checked
    by `parse_plan`; `max_chars` None = `search.max_chars`, as search's own default, so that
    recall without a plan stays byte-identical to search."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    question: str
    plan: Any = None
    max_chars: int | None = None
    condense: bool = True


def format_recall(question: str, results: list[StepResult], max_chars: int) -> str:
    """A line per step, then the merged evidence as numbered blocks under one budget.

    The step lines give way first: when they would crowd out every block (or the line that
    counts the hidden results), they compact, down to one line for all steps, so the
    response keeps at least one block whenever there is one, and always that count.
    """
    return layout_recall(question, results, max_chars).text


def layout_recall(question: str, results: list[StepResult], max_chars: int) -> Layout:
    """`format_recall`, saying how many blocks it shows in full (1..shown) and lists;
    `max_chars` is clamped by the caller (`search_budget`), recall fits a note line in it."""
    items = merge(results)
    shown_q = clip(one_line(question), 160)
    head = f'recall "{shown_q}": {len(results)} steps, {len(items)} records'
    blocks = [Block(meta=i.meta, content=i.content, index=i.index) for i in items]
    # Superseded memories the search steps left out, counted on the line of hidden results.
    superseded = sum(r.rows.superseded for r in results if r.rows is not None)
    laid = Layout(text="", shown=0)
    for level in (0, 1, 2):
        prelude = [head, *_step_lines(results, level)]
        if not blocks:
            text = "\n".join(prelude)
            if len(text) <= max_chars:
                return Layout(text=text, shown=0)
            laid = Layout(text=text, shown=0)
            continue
        laid = layout_blocks(prelude, blocks, max_chars, hint=HINT, superseded=superseded)
        if laid.shown:
            return laid
    if not blocks:
        return Layout(text=laid.text[:max_chars], shown=0)
    # Not even one block fits beside the header: the header and the count of what is hidden.
    return layout_blocks([head], blocks, max_chars, hint=HINT, superseded=superseded)


def _with_note(note: str, body: str, max_chars: int) -> str:
    return f"note: {note}\n{body}"[:max_chars] if note else body


def _note_room(note: str) -> int:
    return len(f"note: {note}\n") if note else 0


def condensed(
    question: str,
    results: list[StepResult],
    planned: Planned | None,
    reply: Answer,
    max_chars: int,
) -> str:
    """The plan, the answer, the meta lines of the cited evidence and the keys of the rest."""
    items = merge(results)
    head = f'recall "{one_line(question)[:160]}" (local model'
    if planned is not None:
        head += f" planned {len(planned.steps)} steps, {planned.dropped} dropped"
    head += f"): answer from {len(items)} records"
    after = [f"answer: {reply.text}", VERIFY, "cited:"]
    after += [f"[{n}] {items[n - 1].meta}" for n in reply.cited if 0 < n <= len(items)]
    steps = [
        f"step {r.index} {r.label[:160]}: {r.detail if r.outcome == 'ok' else r.outcome}"
        for r in results
    ]
    lines = [head, *steps, *after]
    for level in (1, 2):
        # Step lines give way first, so the answer and the line saying to verify it stay.
        if len("\n".join(lines)) <= max_chars:
            break
        lines = [head, *_step_lines(results, level), *after]
    rest = [i.key for n, i in enumerate(items, start=1) if n not in reply.cited]
    text = "\n".join(lines)
    if rest:
        tail = "not cited: "
        shown: list[str] = []
        for key in rest:
            if len(text) + len(tail) + len(", ".join([*shown, key])) + 40 > max_chars:
                break
            shown.append(key)
        more = f" (+{len(rest) - len(shown)} more)" if len(shown) < len(rest) else ""
        text += "\n" + tail + ", ".join(shown) + more
    return text[:max_chars]


def recall_text(
    reads: Reads,
    args: RecallArgs,
    workspace: str = "",
    *,
    timeout_sec: float | None = None,
    cwd: Path | None = None,
    recall_id: str = "",
) -> str:
    """What the MCP tool and `imprint recall` print: the arguments resolved against config
    and the workspace opened here, once. `timeout_sec` None = `recall.step_timeout_sec`.
    `recall_id` lets a caller (the dashboard) find this recall's trace in the log; empty =
    a fresh one."""
    cfg = reads.runtime.config
    question, plan = args.question, args.plan
    max_chars = search_budget(cfg.search, args.max_chars)
    if not question.strip():
        raise InputError("question: must be non-empty text")
    check_query(question.strip(), "question")
    no_plan = plan is None or plan == "" or plan == []
    # A bad plan is rejected before anything runs.
    steps = None if no_plan else parse_plan(plan, cfg.search)
    if timeout_sec is None:
        timeout_sec = cfg.recall.step_timeout_sec
    recall_id = recall_id or uuid.uuid4().hex[:12]
    # recall.start / recall.done frame the trace: the dashboard and `imprint trace --svg`
    # read the step tools, the step deadline and the total from them. The question is user
    # data, so only its length and a short hash are logged (two recalls of one question can
    # still be matched).
    log.info(
        "recall.start",
        recall_id=recall_id,
        question_chars=len(question),
        question_sha=hashlib.sha256(question.encode("utf-8", "surrogatepass")).hexdigest()[:12],
        steps=len(steps) if steps else 0,
        tools=[step.tool for step in steps or []],
        timeout_sec=timeout_sec,
    )
    started = time.monotonic()
    outcome = Outcome.ERROR
    try:
        ws = reads.open(workspace)
        # An interactive call: background work (capture, re-embedding, watch batches,
        # backups) waits for its turn until this one has answered.
        with reads.runtime.priority.interactive():
            text = _recall(
                reads, question, steps, max_chars, args.condense, ws, timeout_sec, cwd, recall_id
            )
        outcome = Outcome.OK
        return text
    finally:
        log.info(
            "recall.done",
            recall_id=recall_id,
            outcome=outcome.value,
            total_ms=round((time.monotonic() - started) * 1000, 3),
        )


def _recall(
    reads: Reads,
    question: str,
    steps: list[Step] | None,
    max_chars: int,
    condense: bool,
    ws: WorkspaceName,
    timeout_sec: float,
    cwd: Path | None,
    recall_id: str,
) -> str:
    runtime = reads.runtime
    cfg = runtime.config
    model_on = cfg.recall.llm and is_local(cfg.tagger.provider, cfg.tagger.base_url)
    if not model_on:
        note = ""
        if cfg.recall.llm:
            note = (
                f"recall.llm is on, but tagger.provider {cfg.tagger.provider!r} does not run "
                "on this computer; no model was asked"
            )
        budget = max_chars - _note_room(note)
        if steps is None:
            rows = search_rows(reads, ws, _baseline(question).args.resolve(cfg.search))
            return _with_note(note, format_search(rows, budget), max_chars)
        reserve = recall_reserve(runtime)
        # The caller's deadline is when the answer arrives: the steps get what is left of
        # it once the merge, budget, format and hand-back are reserved.
        work_by = (
            time.monotonic()
            + timeout_sec
            - reserve.seconds(timeout_sec, runtime.priority.in_flight)
        )
        results = run_plan(
            reads,
            ws,
            steps,
            timeout_sec,
            recall_id=recall_id,
            cwd=str(cwd) if cwd else "",
            deadline=work_by,
        )
        with reserve.tail(work_by):
            # Kept as it always printed: this budget clamped up to 1200 again, the note then
            # cut from the end (the model path's note fits in front instead).
            shown = format_recall(question, results, normalize_max_chars(budget))
            return _with_note(note, shown, max_chars)
    return _model_recall(
        reads,
        question,
        steps,
        max_chars,
        condense,
        ws,
        timeout_sec=timeout_sec,
        cwd=cwd,
        recall_id=recall_id,
    )


def _baseline(question: str) -> SearchStep:
    """The plain search of the question: step 1 of every planned recall."""
    return SearchStep(args=SearchArgs(query=question))


def recall_reserve(runtime: Runtime) -> Reserve:
    """The runtime's one estimate of a recall's tail (merge, budget, format, hand-back),
    measured by every recall and kept inside each caller's deadline."""
    return runtime.service("recall.reserve", lambda rt: Reserve())


def _gave_up(index: int, steps: list[Step]) -> list[StepResult]:
    """Steps not asked: what was left of the deadline would not have answered them."""
    return [
        StepResult(
            index=index + n,
            label=step.label(),
            outcome=Outcome.SKIPPED_LATE,
            detail="not run: too little time left before the recall's deadline",
        )
        for n, step in enumerate(steps)
    ]


def _model_recall(
    reads: Reads,
    question: str,
    steps: list[Step] | None,
    max_chars: int,
    condense: bool,
    ws: WorkspaceName,
    *,
    timeout_sec: float,
    cwd: Path | None,
    recall_id: str,
) -> str:
    runtime = reads.runtime
    budget = runtime.config.recall.llm_timeout_sec
    deadline = time.monotonic() + budget  # the caller's: when the answer is to arrive
    reserve = recall_reserve(runtime)
    # ONE deadline for both model phases and every step: the caller's, less what the tail
    # after the last wait costs now (measured, with a floor). Gathering until the caller's
    # deadline and only then merging and formatting answered that much late.
    work_by = deadline - reserve.seconds(budget, runtime.priority.in_flight)
    inference = runtime.inference()
    where = str(cwd) if cwd else ""
    planned = None
    if steps is None:
        # Evidence first, model second: the baseline search is asked for before the model is
        # and gathered while it plans, so a planning that fails or times out finds it ready
        # instead of starting it at the deadline, behind a busy model and a busy CPU.
        with reads.deadline() as read_deadline:
            # The planner's one read is sent first: it must not queue behind the evidence's.
            listing = reads.ask(Projects(workspace=ws))
            # Its own step deadline, not the model's: this is the evidence the recall returns
            # whatever the model does, and a recall without it would answer nothing.
            gathering = start_plan(
                reads, ws, [_baseline(question)], timeout_sec, recall_id=recall_id, cwd=where
            )
            listed = read_deadline.wait(listing, "recall")
        projects = [p for p, _ in listed]
        sources = named_sources(reads, ws, question)
        ids = named_ids(reads, ws, question)
        # Reserved again as the model is asked: the recalls that started beside this one
        # are in flight by now, and their tails will meet this one's.
        work_by = min(work_by, deadline - reserve.seconds(budget, runtime.priority.in_flight))
        planned = plan_steps(
            inference,
            question,
            projects,
            work_by,
            recall_id=recall_id,
            search=runtime.config.search,
            sources=sources,
            ids=ids,
        )
        log.info(
            "recall.model.plan",
            recall_id=recall_id,
            steps=len(planned.steps),
            dropped=planned.dropped,
            note=planned.note,
            outcome=planned.outcome.value,
            run_ms=planned.ms,
        )
        if planned.note:
            gathered = gathering.wait()
            with reserve.tail(work_by):
                budget_chars = max_chars - _note_room(planned.note)
                rows = gathered[0].rows
                if rows is None:  # the gathered search failed: search again, as `search` would
                    asked = _baseline(question).args.resolve(runtime.config.search)
                    rows = search_rows(reads, ws, asked)
                return _with_note(planned.note, format_search(rows, budget_chars), max_chars)
        # Only the steps the model added run after planning; the baseline is gathered.
        extra = list(planned.steps[1:])
        if reserve.steps_fit(work_by - time.monotonic()):
            asked_at = time.monotonic()
            added = start_plan(
                reads,
                ws,
                extra,
                timeout_sec,
                recall_id=recall_id,
                cwd=where,
                first_step=2,
                deadline=work_by,
            )
            results = gathering.wait() + added.wait()
            reserve.steps.observe(time.monotonic() - asked_at)
        else:  # they could not answer in what is left: the baseline's evidence stands
            results = gathering.wait() + _gave_up(2, extra)
    else:  # the caller's plan: nothing to plan, its steps start at once
        results = run_plan(
            reads, ws, steps, timeout_sec, recall_id=recall_id, cwd=where, deadline=work_by
        )
    if not condense:
        with reserve.tail(work_by):
            return layout_recall(question, results, max_chars).text
    return _answered(inference, question, results, planned, max_chars, reserve, work_by, recall_id)


def _answered(
    inference: InferenceProxy,
    question: str,
    results: list[StepResult],
    planned: Planned | None,
    max_chars: int,
    reserve: Reserve,
    work_by: float,
    recall_id: str,
) -> str:
    """The model's condensed answer over the gathered evidence (`condensed`), or the
    evidence itself under the model's note when it gave none."""
    with reserve.tail(work_by):
        laid = layout_recall(question, results, max_chars)
    evidence = laid.text
    shown = set(range(1, laid.shown + 1))  # index lines name a record, they show no text
    reply = answer(inference, question, evidence, shown, work_by, recall_id=recall_id)
    log.info(
        "recall.model.answer",
        recall_id=recall_id,
        cited=list(reply.cited),
        note=reply.note,
        outcome=reply.outcome.value,
        run_ms=reply.ms,
    )
    with reserve.tail(work_by):
        if reply.note:
            note = f"{reply.note}; the evidence follows"
            budget_chars = max_chars - _note_room(note)
            return _with_note(note, format_recall(question, results, budget_chars), max_chars)
        return condensed(question, results, planned, reply, max_chars)
