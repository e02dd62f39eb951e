"""The JSON log read back, once for `imprint trace`, the waterfall and the dashboard.

The log holds, per recall id: `recall.start` (the question's length and hash, never its
text; the step tools, the step deadline), one `actor.message` per traced message (the
gather, each step, each read a step sent to a reader pool, each model call) with its queue
wait, run time and outcome, `inference.done` for each model call (its purpose),
`recall.step.timeout` for a step that missed the deadline, the model phases
(`recall.model.plan`, `recall.model.answer`) with their outcome, and `recall.done`.

Logs written before this version are read too: they spelled a late skip `skipped-late` and
a cost skip `skipped-cost`, and a model phase said its outcome only in its note.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from imprint.types import Outcome

__all__ = [
    "CAPTURE_EVENTS",
    "MODEL_PHASES",
    "Event",
    "capture_runs",
    "model_outcome",
    "read_events",
    "read_outcome",
    "read_recall_events",
]

Event = dict[str, Any]  # one JSON line of the log

MODEL_PHASES = {"recall.model.plan": "planning", "recall.model.answer": "answering"}

_OLDER_SPELLINGS = {"skipped-late": Outcome.SKIPPED_LATE, "skipped-cost": Outcome.SKIPPED_COST}


CAPTURE_EVENTS = ("capture.done", "capture.failed")
# A session page shows its newest captures; a long session is captured at every stop.
CAPTURE_RUNS_SHOWN = 50


def capture_runs(paths: Iterable[Path], session_id: str) -> list[Event]:
    """The capture worker's runs for one session (`capture.done` with its turns and time,
    `capture.failed` with its error), oldest first, the newest CAPTURE_RUNS_SHOWN of them.
    `paths` oldest first; a file that cannot be opened, or a line that is not JSON, is
    passed over."""
    found: list[Event] = []
    needle = json.dumps(session_id)
    for path in paths:
        try:
            handle = path.open(encoding="utf-8", errors="replace")
        except OSError:
            continue
        with handle:
            for line in handle:
                if '"capture.' not in line or needle not in line:
                    continue
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if (
                    isinstance(event, dict)
                    and event.get("event") in CAPTURE_EVENTS
                    and event.get("session") == session_id
                ):
                    found.append(event)
    return found[-CAPTURE_RUNS_SHOWN:]


def read_events(paths: Iterable[Path], recall_id: str = "") -> Iterator[Event]:
    """Every event that carries a recall id (a prefix of it, if given), in log order.
    `paths` oldest first; a file that cannot be opened is passed over."""
    for path in paths:
        yield from _file_events(path, recall_id)


def read_recall_events(
    paths: Iterable[Path], recall_id: str = "", *, limit: int = 0
) -> dict[str, list[Event]]:
    """`read_events` grouped by recall id, in the order the recalls started logging.

    With `limit`, only the newest `limit` recalls are kept (files are read newest first and
    reading stops once that many recalls are complete).
    """
    found: dict[str, list[Event]] = {}
    chunks: list[dict[str, list[Event]]] = []
    for path in reversed(list(paths)):
        per_file: dict[str, list[Event]] = {}
        for event in _file_events(path, recall_id):
            per_file.setdefault(event["recall_id"], []).append(event)
        chunks.append(per_file)
        if limit and len({rid for c in chunks for rid in c}) > limit:
            break
    for per_file in reversed(chunks):  # back to oldest first, so events stay in log order
        for rid, events in per_file.items():
            found.setdefault(rid, []).extend(events)
    if limit and len(found) > limit:
        keep = list(found)[-limit:]
        found = {rid: found[rid] for rid in keep}
    return found


def _file_events(path: Path, recall_id: str) -> Iterator[Event]:
    try:
        handle = path.open(encoding="utf-8", errors="replace")
    except OSError:
        return
    with handle:
        for line in handle:
            # Cheap filter before parsing: most lines are not a recall's.
            if '"recall_id"' not in line or (recall_id and recall_id not in line):
                continue
            try:
                event = json.loads(line)
            except ValueError:
                continue
            rid = event.get("recall_id") if isinstance(event, dict) else None
            if not rid or not isinstance(rid, str):
                continue
            if recall_id and not rid.startswith(recall_id):
                continue
            yield event


def read_outcome(raw: object, default: Outcome = Outcome.OK) -> Outcome:
    """An outcome as logged, in this version's spelling or an older one (`default` when the
    event has none). One this version does not know reads as an error: shown, never hidden."""
    if raw is None or raw == "":
        return default
    if not isinstance(raw, str):
        return Outcome.ERROR
    if raw in _OLDER_SPELLINGS:
        return _OLDER_SPELLINGS[raw]
    try:
        return Outcome(raw)
    except ValueError:
        return Outcome.ERROR


def model_outcome(event: Event) -> Outcome:
    """A model phase's outcome from the recall's side: logged with it, or (older logs) told
    by its note."""
    if event.get("outcome"):
        return read_outcome(event["outcome"])
    note = str(event.get("note", ""))
    if not note:
        return Outcome.OK
    if "timed out" in note:
        return Outcome.TIMEOUT  # the recall stopped waiting at its deadline
    if "no time left" in note:
        return Outcome.SKIPPED_LATE
    if note.startswith("model error"):
        return Outcome.ERROR
    return Outcome.FALLBACK  # unparseable, no valid step, an untraceable answer
