"""recall's model path: a local model plans the steps and condenses the evidence.

Runs only when `recall.llm` is on and the tagger's provider runs on this computer. Planning
and answering share ONE deadline (`recall.llm_timeout_sec`), computed once. Each prompt
starts with a fixed part (instructions, tool list) that never changes, so llama.cpp reuses
its evaluated state from the previous call and only the question and evidence are new.
Every failure falls back to what the deterministic path gives, with a one-line note.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from imprint.actors.inference import CompleteRequest, Completion, InferenceProxy, ask_model
from imprint.actors.read_messages import FetchRecords, SourceChunks
from imprint.config import SearchConfig
from imprint.errors import InputError
from imprint.reads.gateway import Reads
from imprint.reads.search import SearchArgs
from imprint.recall.plan import (
    FileChunksStep,
    FileSummaryStep,
    GetMemoryStep,
    NeighborsStep,
    SearchStep,
    Step,
    parse_plan,
)
from imprint.types import MemoryId, Outcome, RecallId, WorkspaceName

__all__ = [
    "ANSWER_SYSTEM",
    "PLAN_SCHEMA",
    "PLAN_SYSTEM",
    "Answer",
    "Planned",
    "answer",
    "answer_grammar",
    "named_ids",
    "named_sources",
    "plan_schema",
    "plan_steps",
    "restates_headers",
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


def _enum(values: list[str]) -> dict[str, Any]:
    return {"type": "string", "enum": values}


def plan_schema(
    projects: Sequence[str] = (), sources: Sequence[str] = (), ids: Sequence[str] = ()
) -> dict[str, Any]:
    """The steps a planner can fill for this question, and nothing else.

    search, kg_query and list_sources always (projects limited to the workspace's); file
    reads only for paths the question names that exist, record reads only for ids it names
    that exist. Ids and paths are enums, so the model cannot write one it was not given. No
    type, lang or layer filters: a first trial emptied steps with guessed type filters.
    """
    project = _enum(list(projects)) if projects else _STR
    steps = [
        _step("search", {"query": _STR, "project": project}, ["query"]),
        _step("kg_query", {"subject": _STR, "predicate": _STR}, ["subject"]),
        _step("list_sources", {"project": project}, []),
    ]
    if sources:
        source = _enum(list(sources))
        steps.append(_step("file_summary", {"source": source}, ["source"]))
        steps.append(
            _step("file_chunks", {"source": source, "start": _INT, "end": _INT}, ["source"])
        )
    if ids:
        rid = _enum(list(ids))
        steps.append(_step("get_memory", {"id": rid}, ["id"]))
        steps.append(_step("neighbors", {"id": rid}, ["id"]))
    return {
        "type": "object",
        "properties": {
            "steps": {"type": "array", "maxItems": MAX_MODEL_STEPS, "items": {"anyOf": steps}}
        },
        "required": ["steps"],
        "additionalProperties": False,
    }


PLAN_SCHEMA: dict[str, Any] = plan_schema()

PLAN_SYSTEM = (
    "You plan lookups in a developer's local memory. A plain search of the whole question "
    "always runs; add up to 4 steps that find what it would miss, one per part of the "
    "question. Tools: search(query, project) finds text; kg_query(subject, predicate) finds "
    "facts; list_sources(project) lists files. Only when paths are listed: file_summary(source) "
    "and file_chunks(source, start, end) read one of them. Only when ids are listed: "
    "get_memory(id) and neighbors(id) expand one of them. Reply with JSON "
    '{"steps": [{"tool": ..., "args": {...}}]}.'
)

ANSWER_SYSTEM = (
    "Answer the question using only the numbered evidence. End every sentence with the "
    "numbers of the evidence it comes from, like [2]. Say what the cited text says; do not "
    "add facts and do not repeat the evidence headers. At most 4 sentences."
)
MAX_SENTENCES = 4
SENTENCE_CHARS = 160  # with max_tokens 200, a first sentence always ends

_CITE = re.compile(r"\[(\d{1,3})\]")


def answer_grammar(shown: int) -> str:
    """GBNF: 1-4 sentences, each some text and then citations of blocks 1..`shown` only.

    The text of a sentence cannot hold `[`, `]`, a newline or a sentence end, so a sentence
    can only end after its citations, and a number outside 1..shown cannot be written.
    """
    numbers = " | ".join(f'"{n}"' for n in range(shown, 0, -1))
    return "\n".join(
        [
            f'root ::= sentence (" " sentence){{0,{MAX_SENTENCES - 1}}}',
            f'sentence ::= [A-Z] [^\\[\\]\\n.!?]{{8,{SENTENCE_CHARS}}} cite (cite){{0,2}} "."',
            'cite ::= " [" num "]"',
            f"num ::= {numbers}",
        ]
    )


_GLUE = frozenset(
    {
        "a",
        "an",
        "and",
        "answer",
        "code",
        "question",
        "result",
        "results",
        "are",
        "as",
        "at",
        "block",
        "blocks",
        "by",
        "chunk",
        "chunks",
        "doc",
        "docs",
        "evidence",
        "file",
        "files",
        "for",
        "from",
        "id",
        "ids",
        "in",
        "is",
        "it",
        "its",
        "listed",
        "mentions",
        "named",
        "note",
        "of",
        "on",
        "or",
        "project",
        "record",
        "records",
        "say",
        "says",
        "score",
        "see",
        "shows",
        "source",
        "sources",
        "that",
        "the",
        "these",
        "this",
        "to",
        "type",
        "with",
    }
)


def _tokens(text: str) -> list[str]:
    return [t.strip(".,;:()[]\"'!?").lower() for t in re.split(r"[\s|]+", text) if t.strip()]


def header_words(evidence: str, shown: int) -> set[str]:
    """The tokens of everything in the evidence that is not an excerpt: the recall and step
    lines, the blocks' provenance lines, the index lines and the count line (and the parts
    of their paths). `shown` is kept for callers; every header counts."""
    words: set[str] = set()
    lines = evidence.splitlines()
    excerpt = False
    for line in lines:
        if excerpt:  # the line after a block's provenance line is its excerpt
            excerpt = False
            continue
        if re.match(r"^\[\d+\] \S+ \| ", line):
            excerpt = True
        for token in _tokens(line):
            words.add(token)
            words.update(p for p in re.split(r"[/#.+,_:=-]+", token) if p)
    return words


def restates_headers(text: str, headers: set[str]) -> bool:
    """True when, citations and connecting words aside, the reply says nothing its blocks'
    headers do not: fewer than two words of its own."""
    own = [
        t
        for t in _tokens(_CITE.sub(" ", text))
        if re.search(r"[a-z]", t)
        and t not in headers
        and t not in _GLUE
        and not all(p in headers for p in re.split(r"[/#.+,_-]+", t) if p)
    ]
    return len(own) < 2


class Planned(BaseModel):
    model_config = ConfigDict(frozen=True)

    steps: tuple[Step, ...]  # the baseline search first
    dropped: int
    note: str  # empty when the model planned; otherwise why the plain search stands alone
    ms: float
    # ok; skipped_late (no time left to ask); timeout; error; fallback (no usable plan)
    outcome: Outcome


class Answer(BaseModel):
    model_config = ConfigDict(frozen=True)

    text: str
    cited: tuple[int, ...]
    note: str  # empty when the answer is usable
    ms: float
    # ok; skipped_late (no time left to ask); timeout; error; fallback (no usable answer)
    outcome: Outcome


def _left(deadline: float) -> float:
    return deadline - time.monotonic()


_PATH = re.compile(r"[\w.~-]*[\w~-](?:/[\w.~-]+)*\.[A-Za-z0-9]{1,10}\b|[\w.~-]+(?:/[\w.~-]+)+")
_ID = re.compile(r"\b[0-9a-f]{16}\b")


def named_sources(reads: Reads, workspace: WorkspaceName, question: str) -> list[str]:
    """Paths the question names that are sources in the workspace (at most 8)."""
    out: list[str] = []
    for candidate in dict.fromkeys(m.strip(".,;:") for m in _PATH.findall(question)):
        if not candidate or len(out) >= 8:
            continue
        with reads.deadline() as deadline:
            _, total = deadline.wait(
                reads.ask(SourceChunks(workspace=workspace, source=candidate, start=0, end=0)),
                "recall",
            )
        if total:
            out.append(candidate)
    return out


def named_ids(reads: Reads, workspace: WorkspaceName, question: str) -> list[str]:
    """Record ids the question names that exist in the workspace (at most 8)."""
    candidates = tuple(dict.fromkeys(MemoryId(m) for m in _ID.findall(question)))[:8]
    if not candidates:
        return []
    with reads.deadline() as deadline:
        found = deadline.wait(
            reads.ask(FetchRecords(workspace=workspace, ids=candidates)), "recall"
        )
    return [c for c in candidates if c in found]


def _offered(step: Step, sources: list[str], ids: list[str]) -> bool:
    """Whether a step uses only the paths and ids the planner was given."""
    if isinstance(step, FileSummaryStep | FileChunksStep):
        return step.args.source in sources
    if isinstance(step, GetMemoryStep | NeighborsStep):
        return step.args.id in ids
    return True


# A model call that gave up at the deadline, or was taken too late to start: the recall's
# model phase timed out.
_TIMED_OUT = (Outcome.TIMEOUT, Outcome.STOPPED, Outcome.SKIPPED_LATE)


def _skip_note(what: str, result: Completion) -> str:
    return f"{what} skipped: {result.detail}"


def plan_steps(
    inference: InferenceProxy,
    question: str,
    projects: list[str],
    deadline: float,
    *,
    recall_id: str = "",
    search: SearchConfig | None = None,
    sources: list[str] | None = None,
    ids: list[str] | None = None,
) -> Planned:
    """The baseline search, plus the model's valid steps; invalid ones dropped and counted.

    The model is offered file reads only for `sources` and record reads only for `ids` (what
    the question names that exists); a step naming anything else is dropped here too.
    """
    sources = list(sources or [])
    ids = list(ids or [])
    baseline = SearchStep(args=SearchArgs(query=question))
    started = time.monotonic()
    if _left(deadline) <= 0:
        return _plan_alone(baseline, "planning skipped: no time left", 0, Outcome.SKIPPED_LATE)
    shown_projects = ", ".join(projects[:20]) or "(none)"
    user = f"Projects: {shown_projects}\n"
    if sources:
        user += f"Paths: {', '.join(sources)}\n"
    if ids:
        user += f"Ids: {', '.join(ids)}\n"
    result = ask_model(
        inference,
        CompleteRequest(
            recall_id=RecallId(recall_id),
            messages=(
                {"role": "system", "content": PLAN_SYSTEM},
                {"role": "user", "content": f"{user}Question: {question}"},
            ),
            deadline=deadline,
            json_schema=plan_schema(projects[:20], sources, ids),
            max_tokens=160,
            purpose="recall.plan",
            pin_prefix=True,
        ),
    )
    ms = round((time.monotonic() - started) * 1000, 1)
    if result.outcome == Outcome.SKIPPED_COST:
        return _plan_alone(baseline, _skip_note("planning", result), ms, Outcome.FALLBACK)
    if result.outcome in _TIMED_OUT:
        return _plan_alone(baseline, "planning timed out", ms, Outcome.TIMEOUT)
    if result.outcome == Outcome.ERROR:
        return _plan_alone(baseline, f"model error: {result.detail}", ms, Outcome.ERROR)
    data = result.data
    if result.outcome == Outcome.INVALID:
        # A provider without grammars (ollama) may break the schema in one step only: the
        # steps are judged one by one below, as a caller's would be.
        try:
            data = json.loads(result.text)
        except ValueError:
            data = None
    elif not result.ok:
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("steps"), list):
        return _plan_alone(baseline, "unparseable plan", ms, Outcome.FALLBACK)
    steps: list[Step] = [baseline]
    dropped = 0
    for raw in data["steps"][:MAX_MODEL_STEPS]:
        try:
            candidate = parse_plan([baseline.entry(), raw], search)[1]
        except InputError:
            dropped += 1  # invalid, or a repeat of the baseline
            continue
        if not _offered(candidate, sources, ids) or any(
            candidate.entry() == s.entry() for s in steps
        ):
            dropped += 1
            continue
        steps.append(candidate)
    if len(steps) == 1:
        note, outcome = "no valid step from the model", Outcome.FALLBACK
    else:
        note, outcome = "", Outcome.OK
    return Planned(steps=tuple(steps), dropped=dropped, note=note, ms=ms, outcome=outcome)


def _plan_alone(baseline: Step, note: str, ms: float, outcome: Outcome) -> Planned:
    """The plain search alone, and why."""
    return Planned(steps=(baseline,), dropped=0, note=note, ms=ms, outcome=outcome)


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
        return _no_answer("answer skipped: no time left", 0, Outcome.SKIPPED_LATE)
    if not shown:
        return _no_answer("answer skipped: no evidence shown", 0, Outcome.FALLBACK)
    result = ask_model(
        inference,
        CompleteRequest(
            recall_id=RecallId(recall_id),
            messages=(
                {"role": "system", "content": ANSWER_SYSTEM},
                {"role": "user", "content": f"{evidence}\n\nQuestion: {question}"},
            ),
            deadline=deadline,
            max_tokens=200,
            purpose="recall.answer",
            grammar=answer_grammar(max(shown)),
        ),
    )
    ms = round((time.monotonic() - started) * 1000, 1)
    if result.outcome == Outcome.SKIPPED_COST:
        return _no_answer(_skip_note("answer", result), ms, Outcome.FALLBACK)
    if result.outcome in _TIMED_OUT:
        return _no_answer("answer timed out", ms, Outcome.TIMEOUT)
    if not result.ok:
        return _no_answer(f"model error: {result.detail}", ms, Outcome.ERROR)
    text = result.text.strip()
    if not text.endswith("].") and "]." in text:
        # Cut at max_tokens mid-sentence: keep the complete (cited) sentences only.
        text = text[: text.rindex("].") + 2]
    cited = tuple(dict.fromkeys(int(n) for n in _CITE.findall(text)))
    if not cited:
        return Answer(
            text=text, cited=(), note="answer cites no evidence", ms=ms, outcome=Outcome.FALLBACK
        )
    unknown = [n for n in cited if n not in shown]
    if unknown:
        return Answer(
            text=text,
            cited=cited,
            note=f"answer cites evidence not shown: {unknown}",
            ms=ms,
            outcome=Outcome.FALLBACK,
        )
    if restates_headers(text, header_words(evidence, max(shown))):
        return Answer(
            text=text,
            cited=cited,
            note="answer only restates the evidence headers",
            ms=ms,
            outcome=Outcome.FALLBACK,
        )
    return Answer(text=text, cited=cited, note="", ms=ms, outcome=Outcome.OK)


def _no_answer(note: str, ms: float, outcome: Outcome) -> Answer:
    return Answer(text="", cited=(), note=note, ms=ms, outcome=outcome)
