"""What `imprint status` and the dashboard's overview show of the hooks, per client: its
last capture (the capture worker's counts, `imprint.capture.worker.client_stats`) and its
hook failures (each hook run's record, `imprint.hooks.state`)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from imprint.hooks.events import CLIENTS
from imprint.hooks.state import read_state

__all__ = ["ClientHooks", "client_hooks", "hooks_lines", "when"]


def when(at: object) -> str:
    """A moment as local time to the second; "never" when there is none."""
    if not isinstance(at, int | float):
        return "never"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


@dataclass(frozen=True)
class ClientHooks:
    client: str
    runs: int  # hook runs, every event
    failures: int
    last_failure: float | None
    last_error: str  # "<event>: <reason>" of the newest failure
    captures: int
    turns: int
    last_capture: float | None
    capture_failures: int
    last_capture_error: str


def _number(row: dict[str, object], key: str) -> float | None:
    value = row.get(key)
    return float(value) if isinstance(value, int | float) else None


def client_hooks(data_dir: Path) -> list[ClientHooks]:
    """One row per client a hook ran for or a capture was counted for; none when no hook
    has run."""
    from imprint.capture.worker import client_stats  # the daemon's side: only when shown

    state, stats = read_state(data_dir), client_stats(data_dir)
    seen = set(state) | set(stats)
    rows = []
    for client in [*(c for c in CLIENTS if c in seen), *sorted(seen - set(CLIENTS))]:
        events = state.get(client, {})
        failed = [(e, r) for e, r in events.items() if _number(r, "last_failure") is not None]
        newest = max(failed, key=lambda er: _number(er[1], "last_failure") or 0.0, default=None)
        captured = stats.get(client, {})
        rows.append(
            ClientHooks(
                client=client,
                runs=sum(int(r.get("runs", 0)) for r in events.values()),
                failures=sum(int(r.get("failures", 0)) for r in events.values()),
                last_failure=_number(newest[1], "last_failure") if newest else None,
                last_error=f"{newest[0]}: {newest[1].get('last_error', '')}" if newest else "",
                captures=int(captured.get("captures", 0)),
                turns=int(captured.get("turns", 0)),
                last_capture=_number(captured, "last_capture_at"),
                capture_failures=int(captured.get("failures", 0)),
                last_capture_error=str(captured.get("last_error", "")),
            )
        )
    return rows


def hooks_lines(rows: list[ClientHooks]) -> list[str]:
    """`imprint status`'s hooks section: a line per client, and one per failure kind."""
    if not rows:
        return []
    lines = ["hooks:"]
    for row in rows:
        lines.append(
            f"  {row.client}: last capture {when(row.last_capture)} ({row.captures} captures, "
            f"{row.turns} turns); {row.runs} hook runs, {row.failures} failed"
        )
        if row.failures:
            lines.append(f"    last hook failure {when(row.last_failure)}: {row.last_error}")
        if row.capture_failures:
            lines.append(
                f"    {row.capture_failures} captures failed, the last: {row.last_capture_error}"
            )
    return lines
