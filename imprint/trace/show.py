"""`imprint trace`: the JSON log as a table per recall, the slowest row marked.

Each recall's rows are its traced actor messages (the gather, each step, each model phase)
with their actor, queue wait, run time and outcome, and the model phases as the recall saw
them (`recall.model.plan`, `recall.model.answer`: how long it waited, and whether it gave up
at the deadline), read from `{data_dir}/logs/imprint.jsonl` in log order. A row is logged
when its work ends, so a step logged before the planning row ran while the model planned.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from imprint.trace.log import MODEL_PHASES, Event, model_outcome, read_events, read_outcome
from imprint.types import Outcome

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["load_recalls", "render_trace"]


def load_recalls(paths: list[Path], recall: str = "") -> dict[str, list[Event]]:
    """Each recall's rows, by recall id in the order of their first row: its actor messages
    and model phases in log order, each model call's row naming what the model was asked for
    (the purpose its `inference.done` logged)."""
    recalls: dict[str, list[Event]] = {}
    purposes: dict[str, str] = {}  # request id -> what the model was asked for
    for event in read_events(paths, recall):
        kind = event.get("event")
        if kind == "inference.done" and event.get("request_id"):
            purposes[event["request_id"]] = str(event.get("purpose", ""))
        if kind == "actor.message" or kind in MODEL_PHASES:
            recalls.setdefault(event["recall_id"], []).append(event)
    for rows in recalls.values():
        for e in rows:
            if e.get("message") == "inference.complete":
                e.setdefault("purpose", purposes.get(e.get("request_id", ""), ""))
    return recalls


def _phase(event: Event) -> str:
    if event.get("event") in MODEL_PHASES:
        return MODEL_PHASES[event["event"]]
    kind = event.get("message", "")
    if kind == "recall.step":
        return f"step {event.get('step')}"
    if isinstance(event.get("step"), int) and event["step"] > 0:
        return f"  step {event['step']}"  # a read the step sent to a reader pool
    if kind == "inference.complete":
        purpose = event.get("purpose", "")
        return f"model ({purpose})" if purpose else "model"
    if kind == "recall.gather":
        return "gather"
    return kind


def render_trace(log: Path, recall: str = "", console: Console | None = None) -> int:
    """Print a table per recall in `log` (or those whose id starts with `recall`); 1 if
    there is none."""
    from rich.console import Console  # imported when a table is drawn: the CLI starts fast
    from rich.table import Table

    console = console or Console()
    recalls = load_recalls([log], recall)
    if not recalls:
        console.print(f"no recall traces in {log}" + (f" for {recall!r}" if recall else ""))
        return 1
    for rid, events in recalls.items():
        slowest = max(events, key=lambda e: float(e.get("queue_ms", 0)) + float(e.get("run_ms", 0)))
        planning = next(
            (n for n, e in enumerate(events) if e.get("event") == "recall.model.plan"), None
        )
        table = Table(
            title=f"recall {rid} ({events[0].get('timestamp', '')})", title_justify="left"
        )
        for column in ("phase", "actor", "message", "queue ms", "run ms", "outcome", "when", ""):
            table.add_column(column, justify="right" if "ms" in column else "left")
        for n, e in enumerate(events):
            model = e.get("event") in MODEL_PHASES
            table.add_row(
                _phase(e),
                "(recall)" if model else str(e.get("actor", "")),
                str(e.get("event") if model else e.get("message", "")),
                "" if model else f"{float(e.get('queue_ms', 0)):.1f}",
                f"{float(e.get('run_ms', 0)):.1f}",
                model_outcome(e) if model else read_outcome(e.get("outcome")),
                _when(e, n, planning),
                "<- slowest" if e is slowest else "",
            )
        console.print(table)
    return 0


def _when(event: Event, n: int, planning: int | None) -> str:
    """Where a row falls against the planning: what ran during it, and a wait that hit the
    deadline."""
    if event.get("event") == "recall.model.plan":
        return "hit the deadline" if model_outcome(event) == Outcome.TIMEOUT else ""
    if planning is None or event.get("event") != "actor.message":
        return ""
    if event.get("message") == "inference.complete":
        return ""  # the model's own row is logged whenever the InferenceActor took it
    return "during planning" if n < planning else "after planning"
