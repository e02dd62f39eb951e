"""recall: one round trip for a multi-part question.

With a plan, its steps (reads of the 7 evidence tools) run concurrently under one deadline
and their results merge into one budgeted response. Without a plan and without a model,
recall is exactly the compact search for the question. With the model path on, a local model
plans the steps and condenses the evidence into a cited answer (`imprint.recall.model`).
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

from imprint.actors.read_messages import Projects
from imprint.errors import InputError
from imprint.logs import get_logger
from imprint.providers import is_local
from imprint.reads.evidence import Block, Layout, layout_blocks, one_line
from imprint.reads.gateway import Reads
from imprint.reads.search import format_search, normalize_max_chars, search_rows
from imprint.recall.coordinator import run_plan
from imprint.recall.evidence import StepResult, merge
from imprint.recall.model import (
    Answer,
    Planned,
    answer,
    named_ids,
    named_sources,
    plan_steps,
)
from imprint.recall.plan import Step, parse_plan

__all__ = ["condensed", "format_recall", "layout_recall", "recall_text"]

log = get_logger("imprint.recall")

HINT = "raise max_chars (up to 12000) or narrow the steps"


def format_recall(
    question: str, results: list[StepResult], max_chars: int, *, clamp: bool = True
) -> str:
    """A line per step, then the merged evidence as numbered blocks under one budget."""
    return layout_recall(question, results, max_chars, clamp=clamp).text


def layout_recall(
    question: str, results: list[StepResult], max_chars: int, *, clamp: bool = True
) -> Layout:
    """`format_recall`, saying how many blocks it shows in full (1..shown) and lists."""
    max_chars = normalize_max_chars(max_chars) if clamp else max_chars
    items = merge(results)
    shown_q = one_line(question)
    shown_q = shown_q if len(shown_q) <= 160 else shown_q[:159] + "…"
    prelude = [f'recall "{shown_q}": {len(results)} steps, {len(items)} records']
    for r in results:
        label = r.label if len(r.label) <= 160 else r.label[:159] + "…"
        status = r.detail if r.outcome == "ok" else f"{r.outcome}: {r.detail}"
        prelude.append(f"step {r.index} {label}: {status}")
    blocks = [Block(meta=i.meta, content=i.content, index=i.index) for i in items]
    if not blocks:
        return Layout(text="\n".join(prelude)[:max_chars], shown=0)
    return layout_blocks(prelude, blocks, max_chars, hint=HINT)


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
    lines = [head]
    lines += [
        f"step {r.index} {r.label[:160]}: {r.detail if r.outcome == 'ok' else r.outcome}"
        for r in results
    ]
    lines.append(f"answer: {reply.text}")
    lines.append("cited:")
    lines += [f"[{n}] {items[n - 1].meta}" for n in reply.cited if 0 < n <= len(items)]
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
    question: str,
    plan: Any = None,
    max_chars: int = 4000,
    condense: bool = True,
    workspace: str = "",
    *,
    timeout_sec: float = 10.0,
    cwd: Path | None = None,
) -> str:
    max_chars = normalize_max_chars(max_chars)
    if not isinstance(question, str) or not question.strip():
        raise InputError("question: must be non-empty text")
    no_plan = plan is None or plan == "" or plan == []
    steps = None if no_plan else parse_plan(plan)  # a bad plan is rejected before anything runs
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
            rows = search_rows(reads, question, workspace=workspace)
            return _with_note(note, format_search(rows, budget, clamp=False), max_chars)
        ws = reads.open(workspace)
        results = run_plan(
            reads,
            ws,
            steps,
            timeout_sec,
            recall_id=uuid.uuid4().hex[:12],
            cwd=str(cwd) if cwd else "",
        )
        return _with_note(note, format_recall(question, results, budget), max_chars)
    return _model_recall(
        reads, question, steps, max_chars, condense, workspace, timeout_sec=timeout_sec, cwd=cwd
    )


def _model_recall(
    reads: Reads,
    question: str,
    steps: list[Step] | None,
    max_chars: int,
    condense: bool,
    workspace: str,
    *,
    timeout_sec: float,
    cwd: Path | None,
) -> str:
    runtime = reads.runtime
    deadline = time.monotonic() + runtime.config.recall.llm_timeout_sec  # ONE, for both phases
    recall_id = uuid.uuid4().hex[:12]
    ws = reads.open(workspace)
    inference = runtime.inference()
    planned = None
    if steps is None:
        with reads.deadline() as read_deadline:
            listed = read_deadline.wait(reads.projects(Projects(workspace=ws)), "recall")
        projects = [p for p, _ in listed]
        planned = plan_steps(
            inference,
            question,
            projects,
            deadline,
            recall_id=recall_id,
            sources=named_sources(reads, ws, question),
            ids=named_ids(reads, ws, question),
        )
        log.info(
            "recall.model.plan",
            recall_id=recall_id,
            steps=len(planned.steps),
            dropped=planned.dropped,
            note=planned.note,
            run_ms=planned.ms,
        )
        if planned.note:
            budget = max_chars - _note_room(planned.note)
            rows = search_rows(reads, question, workspace=ws)
            return _with_note(planned.note, format_search(rows, budget, clamp=False), max_chars)
        steps = list(planned.steps)
    results = run_plan(
        reads, ws, steps, timeout_sec, recall_id=recall_id, cwd=str(cwd) if cwd else ""
    )
    laid = layout_recall(question, results, max_chars)
    evidence = laid.text
    if not condense:
        return evidence
    shown = set(range(1, laid.shown + 1))  # index lines name a record, they show no text
    reply = answer(inference, question, evidence, shown, deadline, recall_id=recall_id)
    log.info(
        "recall.model.answer",
        recall_id=recall_id,
        cited=list(reply.cited),
        note=reply.note,
        run_ms=reply.ms,
    )
    if reply.note:
        note = f"{reply.note}; the evidence follows"
        budget = max_chars - _note_room(note)
        return _with_note(note, format_recall(question, results, budget, clamp=False), max_chars)
    return condensed(question, results, planned, reply, max_chars)
