"""Backfill: the transcripts a client still keeps, as capture events for the queue.

- Claude Code keeps about 30 days of sessions under `~/.claude/projects/<cwd-slug>/`, one
  `<session id>.jsonl` each; the session's folder is the `cwd` of its first line that has one.
- Codex keeps its rollouts under `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`
  (`CODEX_HOME` defaults to `~/.codex`); the first line (`session_meta`) names the session's
  id and folder.
- Gemini CLI keeps `~/.gemini/tmp/<project>/chats/session-*.jsonl`; the first line names the
  session's id, and the project folder's `.project_root` its folder. (Older `.json` chat files
  are rewritten as `.jsonl` by Gemini CLI when a session is resumed; they are not read.)
- Cursor keeps no transcript Imprint reads (its hooks name none): nothing to backfill.

Capturing them is idempotent (each session goes on from its saved offset).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from imprint.errors import InputError

__all__ = ["CLIENTS", "backfill_events", "claude_code_events"]

CLIENTS = ("claude-code", "codex", "gemini")


def _first_lines(path: Path, lines: int = 50) -> Iterator[dict[str, Any]]:
    with path.open("rb") as handle:
        for _, raw in zip(range(lines), handle, strict=False):
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            if isinstance(obj, dict):
                yield obj


def _cwd(path: Path) -> str:
    for obj in _first_lines(path):
        if isinstance(obj.get("cwd"), str):
            return str(obj["cwd"])
    return ""


def _oldest_first(paths: list[Path]) -> list[Path]:
    return sorted(paths, key=lambda p: p.stat().st_mtime)


def _event(client: str, session_id: str, path: Path, cwd: str) -> dict[str, str]:
    return {
        "client": client,
        "session_id": session_id,
        "transcript_path": str(path),
        "cwd": cwd,
        "hook_event_name": "Backfill",
    }


def claude_code_events(home: Path) -> Iterator[dict[str, str]]:
    """One capture event per transcript under `home/.claude/projects`, oldest first."""
    root = home / ".claude" / "projects"
    found = _oldest_first(list(root.glob("*/*.jsonl"))) if root.is_dir() else []
    for path in found:
        yield _event("claude-code", path.stem, path, _cwd(path))


def codex_events(home: Path) -> Iterator[dict[str, str]]:
    """One capture event per rollout under `$CODEX_HOME/sessions`, oldest first."""
    codex_home = os.environ.get("CODEX_HOME")
    root = (Path(codex_home).expanduser() if codex_home else home / ".codex") / "sessions"
    found = _oldest_first(list(root.glob("*/*/*/rollout-*.jsonl"))) if root.is_dir() else []
    for path in found:
        meta = next((o for o in _first_lines(path, 5) if o.get("type") == "session_meta"), {})
        found_payload = meta.get("payload")
        payload: dict[str, Any] = found_payload if isinstance(found_payload, dict) else {}
        session_id = str(payload.get("id") or payload.get("session_id") or "")
        if session_id:
            yield _event("codex", session_id, path, str(payload.get("cwd") or ""))


def gemini_events(home: Path) -> Iterator[dict[str, str]]:
    """One capture event per chat file under `home/.gemini/tmp`, oldest first."""
    root = home / ".gemini" / "tmp"
    found = _oldest_first(list(root.glob("*/chats/session-*.jsonl"))) if root.is_dir() else []
    for path in found:
        first = next(_first_lines(path, 1), {})
        session_id = str(first.get("sessionId") or "")
        marker = path.parent.parent / ".project_root"
        try:
            cwd = marker.read_text("utf-8").strip()
        except OSError:
            cwd = ""
        if session_id:
            yield _event("gemini", session_id, path, cwd)


_BY_CLIENT: dict[str, Callable[[Path], Iterator[dict[str, str]]]] = {
    "claude-code": claude_code_events,
    "codex": codex_events,
    "gemini": gemini_events,
}


def backfill_events(client: str, home: Path) -> Iterator[dict[str, str]]:
    """The capture events for every transcript `client` still keeps under `home`."""
    if client not in _BY_CLIENT:
        raise InputError(
            f"capture: --client {client!r} is not supported; one of {', '.join(CLIENTS)}"
        )
    return _BY_CLIENT[client](home)
