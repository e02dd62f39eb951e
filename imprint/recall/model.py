"""recall's model path: a local model plans the steps and condenses the evidence.

Runs only when `recall.llm` is on and the tagger's provider runs on this computer. Planning
and answering share ONE deadline (`recall.llm_timeout_sec`), computed once. Each prompt
starts with a fixed part (instructions, tool list) that never changes, so llama.cpp reuses
its evaluated state from the previous call and only the question and evidence are new.
Every failure falls back to what the deterministic path gives, with a one-line note.
"""

from __future__ import annotations

import re
import time
from typing import Any

from pydantic import BaseModel, ConfigDict

from imprint.actors.inference import CompleteRequest, InferenceProxy, ask_model
from imprint.config import SearchConfig
from imprint.errors import InputError
from imprint.recall.plan import Step, parse_plan
from imprint.types import RecallId

__all__ = [
    "ANSWER_SYSTEM",
    "PLAN_SCHEMA",
    "PLAN_SYSTEM",
    "Answer",
    "Planned",
    "answer",
    "plan_steps",
]

MAX_MODEL_STEPS = 4
_STR = {"type": "string", "maxLength": 120}
_INT = {"type": "integer", "minimum": 0, "maximum": 500}


def _step(tool: str, args: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "tool": {"const": tool},
            "args": {
                "type": "object",
                "properties": args,
                "required": required,
                "additionalProperties": False,
            },
        },
        "required": ["tool", "args"],
        "additionalProperties": False,
    }


# Only what a planner can know: queries and projects, ids, paths and ranges, fact subjects.
# No type, lang or layer filters: a first trial emptied steps with guessed type filters.
PLAN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "steps": {
            "type": "array",
            "maxItems": MAX_MODEL_STEPS,
            "items": {
                "anyOf": [
                    _step("search", {"query": _STR, "project": _STR}, ["query"]),
                    _step("get_memory", {"id": _STR}, ["id"]),
                    _step("neighbors", {"id": _STR}, ["id"]),
                    _step("file_chunks", {"source": _STR, "start": _INT, "end": _INT}, ["source"]),
                    _step("file_summary", {"source": _STR}, ["source"]),
                    _step("list_sources", {"project": _STR}, []),
                    _step("kg_query", {"subject": _STR, "predicate": _STR}, ["subject"]),
                ]
            },
        }
    },
    "required": ["steps"],
    "additionalProperties": False,
}

PLAN_SYSTEM = (
    "You plan lookups in a developer's local memory. A plain search of the whole question "
    "always runs; add up to 4 steps that find what it would miss, one per part of the "
    "question. Tools: search(query, project) finds text; kg_query(subject, predicate) finds "
    "facts; file_summary(source) and file_chunks(source, start, end) read a file by path; "
    "list_sources(project) lists files; get_memory(id) and neighbors(id) expand a record id. "
    "Use only projects, paths and ids you were given. Reply with JSON "
    '{"steps": [{"tool": ..., "args": {...}}]}.'
)

ANSWER_SYSTEM = (
    "Answer the question using only the numbered evidence. After each claim cite the "
    "evidence it comes from as [n]. Say what each cited piece says; do not add facts. If the "
    "evidence does not answer the question, say so. At most 5 sentences."
)

_CITE = re.compile(r"\[(\d{1,3})\]")


class Planned(BaseModel):
    model_config = ConfigDict(frozen=True)

    steps: tuple[Step, ...]  # the baseline search first
    dropped: int
    note: str  # empty when the model planned; otherwise why the plain search stands alone
    ms: float


class Answer(BaseModel):
    model_config = ConfigDict(frozen=True)

    text: str
    cited: tuple[int, ...]
    note: str  # empty when the answer is usable
    ms: float


def _left(deadline: float) -> float:
    return deadline - time.monotonic()


def plan_steps(
    inference: InferenceProxy,
    question: str,
    projects: list[str],
    deadline: float,
    *,
    recall_id: str = "",
    search: SearchConfig | None = None,
) -> Planned:
    """The baseline search, plus the model's valid steps; invalid ones dropped and counted."""
    baseline = Step(tool="search", args={"query": question})
    started = time.monotonic()
    if _left(deadline) <= 0:
        return Planned(steps=(baseline,), dropped=0, note="planning skipped: no time left", ms=0)
    shown_projects = ", ".join(projects[:20]) or "(none)"
    result = ask_model(
        inference,
        CompleteRequest(
            recall_id=RecallId(recall_id),
            messages=(
                {"role": "system", "content": PLAN_SYSTEM},
                {"role": "user", "content": f"Projects: {shown_projects}\nQuestion: {question}"},
            ),
            deadline=deadline,
            json_schema=PLAN_SCHEMA,
            max_tokens=160,
            purpose="recall.plan",
        ),
    )
    ms = round((time.monotonic() - started) * 1000, 1)
    if result.outcome in ("timeout", "stopped", "skipped-late"):
        return Planned(steps=(baseline,), dropped=0, note="planning timed out", ms=ms)
    if result.outcome == "error":
        return Planned(steps=(baseline,), dropped=0, note=f"model error: {result.detail}", ms=ms)
    if not result.ok or not isinstance(result.data, dict):
        return Planned(steps=(baseline,), dropped=0, note="unparseable plan", ms=ms)
    steps = [baseline]
    dropped = 0
    for raw in result.data.get("steps", [])[:MAX_MODEL_STEPS]:
        try:
            candidate = parse_plan([baseline.model_dump(), raw], search)[1]
        except InputError:
            dropped += 1  # invalid, or a repeat of the baseline
            continue
        if any(candidate == s for s in steps):
            dropped += 1
            continue
        steps.append(candidate)
    note = "" if len(steps) > 1 else "no valid step from the model"
    return Planned(steps=tuple(steps), dropped=dropped, note=note, ms=ms)


def answer(
    inference: InferenceProxy,
    question: str,
    evidence: str,
    shown: set[int],
    deadline: float,
    *,
    recall_id: str = "",
) -> Answer:
    """An answer from exactly `evidence`, kept only if every citation names a shown block."""
    started = time.monotonic()
    if _left(deadline) <= 0:
        return Answer(text="", cited=(), note="answer skipped: no time left", ms=0)
    result = ask_model(
        inference,
        CompleteRequest(
            recall_id=RecallId(recall_id),
            messages=(
                {"role": "system", "content": ANSWER_SYSTEM},
                {"role": "user", "content": f"{evidence}\n\nQuestion: {question}"},
            ),
            deadline=deadline,
            max_tokens=220,
            purpose="recall.answer",
        ),
    )
    ms = round((time.monotonic() - started) * 1000, 1)
    if result.outcome in ("timeout", "stopped", "skipped-late"):
        return Answer(text="", cited=(), note="answer timed out", ms=ms)
    if not result.ok:
        return Answer(text="", cited=(), note=f"model error: {result.detail}", ms=ms)
    text = result.text.strip()
    cited = tuple(dict.fromkeys(int(n) for n in _CITE.findall(text)))
    if not cited:
        return Answer(text=text, cited=(), note="answer cites no evidence", ms=ms)
    unknown = [n for n in cited if n not in shown]
    if unknown:
        return Answer(
            text=text, cited=cited, note=f"answer cites evidence not shown: {unknown}", ms=ms
        )
    return Answer(text=text, cited=cited, note="", ms=ms)
