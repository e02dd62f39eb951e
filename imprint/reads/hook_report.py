"""What `imprint status` and the dashboard's overview show of the hooks, per client: its
last capture (the capture worker's counts, `imprint.hooklib.queue.client_stats`), its
hook failures (each hook run's record, `imprint.hooklib.state`) and, for Claude Code, the
plugin's hooks that found no `imprint` to run (plugin/bin/imprint's log)."""

from __future__ import annotations

import calendar
import math
import time
from dataclasses import dataclass
from pathlib import Path

from imprint.hooklib.events import CLIENTS
from imprint.hooklib.state import read_state

__all__ = [
    "PLUGIN_MISSING",
    "ClientHooks",
    "client_hooks",
    "hooks_lines",
    "plugin_misses",
    "skip_line",
    "when",
]

PLUGIN_MISSING = Path("hooks") / "plugin-missing.log"  # plugin/bin/imprint writes it


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
    missed: int = 0  # the plugin's hooks that found no `imprint`, since a hook last ran
    last_missed: float | None = None
    capture_skips: int = 0  # lines or turns too long to read, passed over by capture
    last_capture_skip: str = ""


def skip_line(count: int, last: str) -> str:
    """What capture passed over, in words (`imprint status`, `imprint hooks status`)."""
    return f"capture skipped {count} lines or turns too long to read, the last: {last}"


def _number(row: dict[str, object], key: str) -> float | None:
    value = row.get(key)
    return float(value) if isinstance(value, int | float) else None


def plugin_misses(data_dir: Path, events: dict[str, dict[str, object]]) -> tuple[int, float]:
    """How many of the Claude Code plugin's hooks found no `imprint` to run since one of
    Claude Code's hooks (`events`, its rows in the hook state) last ran, and when the last
    did (0 when none)."""
    try:
        missed = (data_dir / PLUGIN_MISSING).read_text("utf-8", "replace").splitlines()
    except OSError:
        return 0, 0.0
    ran = max((_number(r, "last_run") or 0.0 for r in events.values()), default=0.0)
    stamps = []
    for line in missed:
        try:
            at = calendar.timegm(time.strptime(line.split(" ", 1)[0], "%Y-%m-%dT%H:%M:%SZ"))
        except ValueError:
            continue
        # The log's stamps are whole seconds and a hook's last run is not: a miss in the
        # second a hook last ran is counted (shown rather than lost).
        if at >= math.floor(ran):
            stamps.append(float(at))
    return len(stamps), max(stamps, default=0.0)


def client_hooks(data_dir: Path) -> list[ClientHooks]:
    """One row per client a hook ran for or a capture was counted for; none when no hook
    has run."""
    from imprint.hooklib.queue import client_stats

    state, stats = read_state(data_dir), client_stats(data_dir)
    missed, last_missed = plugin_misses(data_dir, state.get("claude-code", {}))
    seen = set(state) | set(stats) | ({"claude-code"} if missed else set())
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
                missed=missed if client == "claude-code" else 0,
                last_missed=last_missed if client == "claude-code" and missed else None,
                capture_skips=int(captured.get("skipped", 0)),
                last_capture_skip=str(captured.get("last_skip", "")),
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
        if row.capture_skips:
            lines.append(f"    {skip_line(row.capture_skips, row.last_capture_skip)}")
        if row.missed:
            lines.append(
                f"    the plugin's hooks found no `imprint` to run {row.missed} times, the "
                f"last at {when(row.last_missed)}: `imprint hooks status` says what to set"
            )
    return lines
