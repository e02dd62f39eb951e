"""Backfill: the transcripts a client still keeps, as capture events for the queue.

Claude Code keeps about 30 days of sessions under `~/.claude/projects/<cwd-slug>/`, one
`<session id>.jsonl` each; the session's folder is the `cwd` of its first line that has one.
Capturing them is idempotent (each session goes on from its saved offset).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

__all__ = ["CLIENTS", "claude_code_events"]

CLIENTS = ("claude-code",)


def _cwd(path: Path, lines: int = 50) -> str:
    with path.open("rb") as handle:
        for _, raw in zip(range(lines), handle, strict=False):
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            if isinstance(obj, dict) and isinstance(obj.get("cwd"), str):
                return str(obj["cwd"])
    return ""


def claude_code_events(home: Path) -> Iterator[dict[str, str]]:
    """One capture event per transcript under `home/.claude/projects`, oldest first."""
    root = home / ".claude" / "projects"
    found = sorted(root.glob("*/*.jsonl"), key=lambda p: p.stat().st_mtime) if root.is_dir() else []
    for path in found:
        yield {
            "client": "claude-code",
            "session_id": path.stem,
            "transcript_path": str(path),
            "cwd": _cwd(path),
            "hook_event_name": "Backfill",
        }
