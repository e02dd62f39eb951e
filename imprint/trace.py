"""`imprint trace`: the JSON log as a table per recall, the slowest row marked.

Each recall's rows are its traced actor messages (the gather, each step, each model phase)
with their actor, queue wait, run time and outcome, read from `{data_dir}/logs/imprint.jsonl`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

__all__ = ["load_recalls", "render_trace", "write_svg"]


def load_recalls(lines: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
    """actor.message events that carry a recall id, grouped by it, in log order."""
    recalls: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("event") == "actor.message" and event.get("recall_id"):
            recalls[event["recall_id"]].append(event)
    return dict(recalls)


def _phase(event: dict[str, Any]) -> str:
    kind = event.get("message", "")
    if kind == "recall.step":
        return f"step {event.get('step')}"
    if isinstance(event.get("step"), int) and event["step"] > 0:
        return f"  step {event['step']}"  # a read the step sent to a reader pool
    if kind == "inference.complete":
        return "model"
    if kind == "recall.gather":
        return "gather"
    return kind


def render_trace(log: Path, recall: str = "", console: Console | None = None) -> int:
    console = console or Console()
    with log.open(encoding="utf-8") as handle:
        recalls = load_recalls(handle)
    if recall:
        recalls = {k: v for k, v in recalls.items() if k.startswith(recall)}
    if not recalls:
        console.print(f"no recall traces in {log}" + (f" for {recall!r}" if recall else ""))
        return 1
    for rid, events in recalls.items():
        slowest = max(events, key=lambda e: float(e.get("queue_ms", 0)) + float(e.get("run_ms", 0)))
        table = Table(
            title=f"recall {rid} ({events[0].get('timestamp', '')})", title_justify="left"
        )
        for column in ("phase", "actor", "message", "queue ms", "run ms", "outcome", ""):
            table.add_column(column, justify="right" if "ms" in column else "left")
        for e in events:
            table.add_row(
                _phase(e),
                str(e.get("actor", "")),
                str(e.get("message", "")),
                f"{float(e.get('queue_ms', 0)):.1f}",
                f"{float(e.get('run_ms', 0)):.1f}",
                str(e.get("outcome", "")),
                "<- slowest" if e is slowest else "",
            )
        console.print(table)
    return 0


def write_svg(logs: list[Path], recall: str, out: Path) -> str:
    """The recall's waterfall, the same SVG the dashboard shows, written to `out`."""
    from imprint.errors import ImprintError
    from imprint.waterfall import build_waterfall, read_recall_events, render_svg

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
