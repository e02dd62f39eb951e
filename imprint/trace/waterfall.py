"""A recall's step timings from the JSON log, as rows and as an SVG waterfall.

The events are `imprint.trace.log`'s. An `actor.message` is logged when its handler ends, so
its run started `run_ms` earlier and it entered the mailbox `queue_ms` before that.

The dashboard and `imprint trace --svg` draw the same picture from the same template,
`templates/waterfall.svg`, autoescaped: names in the log never become markup.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from html import escape
from pathlib import Path

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from imprint.errors import ImprintError
from imprint.trace.log import Event, read_outcome, read_recall_events
from imprint.types import Outcome

__all__ = [
    "Bar",
    "RecallSummary",
    "SvgPicture",
    "Waterfall",
    "build_waterfall",
    "escaped",
    "recall_summaries",
    "render_svg",
    "svg_picture",
    "write_svg",
]

# Outcomes drawn as marked bars.
MARKED = (Outcome.TIMEOUT, Outcome.SKIPPED_LATE, Outcome.ERROR)


@dataclass
class Bar:
    """One row: when it entered the mailbox, when it ran, when it ended (ms from the start)."""

    label: str
    kind: str  # gather, step, read, model
    step: int | None
    queued_at: float
    run_at: float
    end_at: float
    outcome: Outcome
    actor: str = ""
    depth: int = 0
    slowest: bool = False
    note: str = ""

    @property
    def queue_ms(self) -> float:
        return self.run_at - self.queued_at

    @property
    def run_ms(self) -> float:
        return self.end_at - self.run_at

    @property
    def total_ms(self) -> float:
        return self.end_at - self.queued_at


@dataclass
class Waterfall:
    recall_id: str
    started: str = ""
    question: str = ""
    timeout_sec: float | None = None
    deadline_ms: float | None = None
    total_ms: float | None = None
    outcome: Outcome | None = None  # the recall's, once it is done
    bars: list[Bar] = field(default_factory=list)

    @property
    def steps(self) -> list[Bar]:
        return [b for b in self.bars if b.kind == "step"]

    @property
    def slowest(self) -> Bar | None:
        return next((b for b in self.bars if b.slowest), None)

    @property
    def failed(self) -> bool:
        return self.outcome == Outcome.ERROR or any(b.outcome in MARKED for b in self.bars)


@dataclass(frozen=True)
class RecallSummary:
    recall_id: str
    started: str
    question: str
    total_ms: float | None
    slowest: str
    slowest_ms: float | None
    failed: bool
    steps: int
    problems: str = ""  # "step 3 kg_query: timeout", for a failed one


def _when(event: Event) -> float | None:
    try:
        return datetime.fromisoformat(str(event["timestamp"])).timestamp()
    except (KeyError, ValueError):
        return None


def _question(start: Event) -> str:
    """How a recall's question is named: its length and hash (older logs held the text)."""
    if "question" in start:
        return str(start["question"])
    chars, sha = start.get("question_chars"), start.get("question_sha")
    return f"question of {chars} chars, sha {sha}" if isinstance(chars, int) else ""


def _recall_events(wf: Waterfall, events: list[Event]) -> tuple[Event | None, list[str]]:
    """What the recall's own events say (its start, question, timeout, outcome, total) into
    `wf`; its start event and the tools of its plan's steps."""
    start_event = next((e for e in events if e.get("event") == "recall.start"), None)
    tools: list[str] = []
    if start_event is not None:
        wf.started = str(start_event.get("timestamp", ""))
        wf.question = _question(start_event)
        if isinstance(start_event.get("timeout_sec"), int | float):
            wf.timeout_sec = float(start_event["timeout_sec"])
        tools = [str(t) for t in start_event.get("tools") or []]
    for e in events:
        timeout = e.get("timeout_sec")
        late = e.get("event") == "recall.step.timeout" and isinstance(e.get("step"), int)
        if late and wf.timeout_sec is None and isinstance(timeout, int | float):
            wf.timeout_sec = float(timeout)
        if e.get("event") == "recall.done":
            wf.outcome = read_outcome(e.get("outcome"))
            if isinstance(e.get("total_ms"), int | float):
                wf.total_ms = float(e["total_ms"])
    return start_event, tools


def build_waterfall(recall_id: str, events: list[Event]) -> Waterfall:
    """The rows of one recall: gather, each step with its reads under it, model phases."""
    wf = Waterfall(recall_id=recall_id)
    start_event, tools = _recall_events(wf, events)
    timed_out: dict[int, Event] = {
        e["step"]: e
        for e in events
        if e.get("event") == "recall.step.timeout" and isinstance(e.get("step"), int)
    }
    messages = [e for e in events if e.get("event") == "actor.message" and _when(e) is not None]
    spans: list[tuple[Event, float, float, float]] = []
    for e in messages:
        end = float(_when(e) or 0.0)
        run = end - float(e.get("run_ms", 0)) / 1000
        queued = run - float(e.get("queue_ms", 0)) / 1000
        spans.append((e, queued, run, end))
    origins = [q for _, q, _, _ in spans]
    if start_event is not None and _when(start_event) is not None:
        origins.append(float(_when(start_event) or 0.0))
    if not origins:
        return wf
    zero = min(origins)
    if not wf.started:
        wf.started = datetime.fromtimestamp(zero).astimezone().isoformat()

    def ms(t: float) -> float:
        return round((t - zero) * 1000, 3)

    gather_run: float | None = None
    gather_sent: float | None = None
    steps: dict[int, Bar] = {}
    reads: dict[int, list[Bar]] = {}
    models: list[Bar] = []
    gathers: list[Bar] = []
    for e, queued, run, end in spans:
        kind = str(e.get("message", ""))
        raw_step = e.get("step")
        step = raw_step if isinstance(raw_step, int) else -1
        outcome = read_outcome(e.get("outcome"))
        actor = str(e.get("actor", ""))
        if kind == "recall.gather":
            gather_run, gather_sent = run, queued
            gathers.append(
                Bar("gather", "gather", None, ms(queued), ms(run), ms(end), outcome, actor)
            )
        elif kind == "recall.step" and step > 0:
            tool = tools[step - 1] if 0 < step <= len(tools) else ""
            label = f"step {step}" + (f" {tool}" if tool else "")
            steps[step] = Bar(label, "step", step, ms(queued), ms(run), ms(end), outcome, actor)
        elif kind.startswith("inference"):
            models.append(Bar("model", "model", None, ms(queued), ms(run), ms(end), outcome, actor))
        elif step > 0:
            bar = Bar(kind, "read", step, ms(queued), ms(run), ms(end), outcome, actor, depth=1)
            reads.setdefault(step, []).append(bar)
    if gather_sent is not None and wf.timeout_sec is not None:
        # run_plan sets the one deadline as it sends the gather message.
        wf.deadline_ms = ms(gather_sent + wf.timeout_sec)
    elif start_event is not None and wf.timeout_sec is not None:
        wf.deadline_ms = ms(float(_when(start_event) or zero) + wf.timeout_sec)
    for index, e in timed_out.items():
        late = steps.get(index)
        if late is not None:
            late.note = f"answered {late.end_at:.0f} ms, after the deadline"
            late.outcome = Outcome.TIMEOUT
            continue
        # No answer logged (yet): the step was sent at the gather's start and is drawn to
        # the deadline, where the coordinator stopped waiting.
        begin = ms(gather_run) if gather_run is not None else 0.0
        end_ms = wf.deadline_ms if wf.deadline_ms is not None else begin
        tool = str(e.get("tool", ""))
        steps[index] = Bar(
            f"step {index}" + (f" {tool}" if tool else ""),
            "step",
            index,
            begin,
            begin,
            end_ms,
            Outcome.TIMEOUT,
            note="no answer by the deadline",
        )
    # Model phases: the plan (when the model planned) comes before the answer.
    names = []
    if any(e.get("event") == "recall.model.plan" for e in events):
        names.append("model: plan")
    names.append("model: answer")
    for i, bar in enumerate(sorted(models, key=lambda b: b.queued_at)):
        bar.label = names[i] if i < len(names) else f"model: call {i + 1}"
    wf.bars.extend(gathers)
    for index in sorted(steps):
        wf.bars.append(steps[index])
        wf.bars.extend(sorted(reads.get(index, []), key=lambda b: b.queued_at))
    for index in sorted(set(reads) - set(steps)):
        wf.bars.extend(reads[index])
    wf.bars.extend(sorted(models, key=lambda b: b.queued_at))
    if wf.steps:
        max(wf.steps, key=lambda b: b.total_ms).slowest = True
    if wf.total_ms is None and wf.bars:
        wf.total_ms = max(b.end_at for b in wf.bars)
    return wf


def recall_summaries(events_by_id: dict[str, list[Event]]) -> list[RecallSummary]:
    """One line per recall, newest first: start, question, total, slowest step, failed."""
    out = []
    for rid, events in events_by_id.items():
        wf = build_waterfall(rid, events)
        slowest = wf.slowest
        out.append(
            RecallSummary(
                recall_id=rid,
                started=wf.started,
                question=wf.question,
                total_ms=wf.total_ms,
                slowest=slowest.label if slowest else "",
                slowest_ms=slowest.total_ms if slowest else None,
                failed=wf.failed,
                steps=len(wf.steps),
                problems=", ".join(
                    f"{b.label}: {b.outcome}" for b in wf.bars if b.outcome in MARKED
                )
                or ("recall: error" if wf.outcome == Outcome.ERROR else ""),
            )
        )
    out.reverse()
    return out


# -- SVG -----------------------------------------------------------------------------------

_WIDTH = 960
_LABEL_W = 290
_CHART_X = 300
_CHART_W = 600
_ROW_H = 22
_TOP = 34
_FILL = {
    "gather": "#7a8ca3",
    "step": "#3b6fb6",
    "read": "#74a7e0",
    "model": "#8a5cc2",
}
_OUTCOME_FILL = {
    Outcome.TIMEOUT: "#e08a1e",
    Outcome.ERROR: "#c8372d",
    Outcome.SKIPPED_LATE: "#9e9e9e",
}


def _tick_step(span: float) -> float:
    for step in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 60000):
        if span / step <= 8:
            return float(step)
    return span / 8


@dataclass(frozen=True)
class _Row:
    """One bar's place on the picture; the template escapes every string in it."""

    kind: str
    step: int | None
    outcome: str
    classes: str
    tip: str
    slowest: bool
    y: int
    indent: int
    bold: bool
    label: str
    bar_h: int
    top: float
    queue_x: float | None
    queue_w: float | None
    run_x: float
    run_w: float
    fill: str
    mark: str
    mark_x: float
    mark_inside: bool
    mark_colour: str


@dataclass(frozen=True)
class SvgPicture:
    """The numbers and texts `templates/waterfall.svg` draws."""

    title: str
    height: int
    ticks: list[tuple[float, str]]
    rows: list[_Row]
    deadline_x: float | None
    deadline: str
    width: int = _WIDTH
    top: int = _TOP
    row_h: int = _ROW_H
    chart_x: int = _CHART_X


def escaped(value: object) -> Markup:
    """Every value put into a template: markup stays (a macro's output), the rest escaped the
    way `html.escape` spells it (`&#x27;`, `&quot;`), for this picture and the dashboard's
    pages alike."""
    if isinstance(value, Markup):
        return value
    return Markup(escape("" if value is None else str(value), quote=True))


_TEMPLATES = Environment(
    loader=PackageLoader("imprint.trace", "templates"),
    autoescape=True,
    finalize=escaped,
    undefined=StrictUndefined,
    # Block tags sit on lines of their own; the lines between them are the output's lines.
    trim_blocks=True,
    lstrip_blocks=True,
)


def _row(bar: Bar, i: int, x: Callable[[float], float], scale: float) -> _Row:
    y = _TOP + i * _ROW_H
    marked = bar.outcome in MARKED
    classes = ["bar", f"kind-{bar.kind}", f"outcome-{bar.outcome}"]
    if bar.slowest:
        classes.append("slowest")
    tip = (
        f"{bar.label} ({bar.actor or '-'}): queue {bar.queue_ms:.1f} ms, run "
        f"{bar.run_ms:.1f} ms, {bar.outcome}" + (f"; {bar.note}" if bar.note else "")
    )
    bar_h = 14 if bar.depth == 0 else 10
    mark = f"{bar.total_ms:.1f} ms"
    if marked:
        mark = f"{bar.outcome.upper()} · {mark}"
    if bar.slowest:
        mark += " · slowest"
    after = x(bar.end_at) + 4
    # No room after the bar: the mark goes inside the bar's end instead.
    inside = after + 6.5 * len(mark) > _WIDTH
    return _Row(
        kind=bar.kind,
        step=bar.step,
        outcome=str(bar.outcome),
        classes=" ".join(classes),
        tip=tip,
        slowest=bar.slowest,
        y=y,
        indent=14 * bar.depth + 6,
        bold=bar.kind == "step",
        label=bar.label[:40],
        bar_h=bar_h,
        top=y + (_ROW_H - bar_h) / 2,
        queue_x=x(bar.queued_at) if bar.queue_ms > 0 else None,
        queue_w=max(1.0, round(bar.queue_ms * scale, 2)) if bar.queue_ms > 0 else None,
        run_x=x(bar.run_at),
        run_w=max(1.0, round(bar.run_ms * scale, 2)),
        fill=_OUTCOME_FILL.get(bar.outcome, _FILL.get(bar.kind, "#3b6fb6")),
        mark=mark,
        mark_x=x(bar.end_at) - 4 if inside else after,
        mark_inside=inside,
        mark_colour="#ffffff" if inside else ("#c8372d" if marked else "#444"),
    )


def svg_picture(wf: Waterfall) -> SvgPicture:
    """Where everything of the waterfall goes: the template's one argument (`svg`)."""
    rows = wf.bars
    height = _TOP + max(1, len(rows)) * _ROW_H + 30
    span = max([b.end_at for b in rows] + [wf.deadline_ms or 0.0, 1.0])
    span *= 1.04
    scale = _CHART_W / span

    def x(t: float) -> float:
        return round(_CHART_X + t * scale, 2)

    title = f"recall {wf.recall_id}"
    if wf.question:
        title += f": {wf.question}"
    ticks = []
    tick = _tick_step(span)
    t = 0.0
    while t <= span:
        ticks.append((x(t), f"{t:g} ms"))
        t += tick
    return SvgPicture(
        title=title,
        height=height,
        ticks=ticks,
        rows=[_row(bar, i, x, scale) for i, bar in enumerate(rows)],
        deadline_x=x(wf.deadline_ms) if wf.deadline_ms is not None else None,
        deadline=f"deadline {wf.deadline_ms:.0f} ms" if wf.deadline_ms is not None else "",
    )


def render_svg(wf: Waterfall) -> str:
    """A self-contained SVG (presentation attributes only: no CSS, no script needed)."""
    return _TEMPLATES.get_template("waterfall.svg").render(svg=svg_picture(wf))


def write_svg(logs: list[Path], recall: str, out: Path) -> str:
    """The recall's waterfall, the same SVG the dashboard shows, written to `out`."""
    found = read_recall_events(logs, recall)
    if not found:
        raise ImprintError(f"--recall: no recall {recall!r} in {', '.join(map(str, logs))}")
    if len(found) > 1:
        raise ImprintError(
            f"--recall: {recall!r} matches {len(found)} recalls ({', '.join(found)}); give more"
        )
    rid, events = next(iter(found.items()))
    out.write_text(render_svg(build_waterfall(rid, events)), encoding="utf-8")
    return f"wrote {out} (recall {rid})"
