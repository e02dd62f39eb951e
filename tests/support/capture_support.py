"""Claude Code transcripts written the way the client writes them, for the capture tests."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from imprint.actors.lifecycle import Runtime
from imprint.actors.read_messages import SourceChunks
from imprint.reads.deadline import Deadline
from imprint.store.records import Record
from imprint.writes import Writes

__all__ = ["BRIEFING", "Transcript", "session_records"]

# What Imprint's own session-start briefing looks like in a transcript's attachment line.
BRIEFING = "Imprint briefing for project demo: decision the kestrel-briefing marker"


class Transcript:
    """One session's `.jsonl`, appended a turn at a time."""

    def __init__(self, path: Path, session_id: str, cwd: Path) -> None:
        self.path = path
        self.session_id = session_id
        self.cwd = cwd
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()

    def _line(self, obj: dict[str, Any]) -> str:
        base = {
            "sessionId": self.session_id,
            "cwd": str(self.cwd),
            "uuid": str(uuid.uuid4()),
            "timestamp": "2026-01-02T10:00:00.000Z",
            "isSidechain": False,
            "userType": "external",
        }
        return json.dumps({**base, **obj}) + "\n"

    def append(self, *objs: dict[str, Any], partial: str = "") -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write("".join(self._line(o) for o in objs) + partial)

    def turn(
        self,
        prompt: str,
        answer: str,
        *,
        command: str = "",
        output: str = "",
        error: bool = False,
        edit: str = "",
    ) -> None:
        """A prompt, the assistant's answer, and optionally one tool call and its result."""
        objs: list[dict[str, Any]] = [
            {"type": "user", "message": {"role": "user", "content": prompt}},
        ]
        content: list[dict[str, Any]] = [{"type": "text", "text": answer}]
        tool_id = f"toolu_{uuid.uuid4().hex[:20]}"
        if command:
            content.append(
                {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": command}}
            )
        elif edit:
            content.append(
                {"type": "tool_use", "id": tool_id, "name": "Edit", "input": {"file_path": edit}}
            )
        objs.append({"type": "assistant", "message": {"role": "assistant", "content": content}})
        if command or edit:
            result = {"type": "tool_result", "tool_use_id": tool_id, "content": output}
            if error:
                result["is_error"] = True
            objs.append({"type": "user", "message": {"role": "user", "content": [result]}})
        self.append(*objs)

    def hook_output(self, text: str = BRIEFING) -> None:
        """What a hook printed, as the client records it: an attachment line, and the
        older form, a meta user message."""
        self.append(
            {
                "type": "attachment",
                "attachment": {"type": "hook_additional_context", "content": [text]},
            },
            {"type": "user", "isMeta": True, "message": {"role": "user", "content": text}},
        )

    def event(self, hook: str = "Stop") -> dict[str, str]:
        return {
            "session_id": self.session_id,
            "transcript_path": str(self.path),
            "cwd": str(self.cwd),
            "hook_event_name": hook,
        }


def session_records(rt: Runtime, project: str, source: str) -> list[Record]:
    """Every record of `source` in `project`, read back through the application layer."""
    writes = Writes(rt)
    ws = writes.open("", create=False)
    records, _ = Deadline(30).wait(
        writes.reads.ask(SourceChunks(workspace=ws, project=project, source=source)), "test"
    )
    return records
