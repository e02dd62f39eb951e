"""Reading a client's transcript from where the last capture ended; Claude Code's format here.

Every format is one JSON object a line, appended as the session goes: Claude Code's here,
Codex's rollout in `imprint.capture.codex`, Gemini CLI's chat file in `imprint.capture.gemini`
(`imprint.capture.formats` picks the reader by client). Each reader leaves out what is not
the conversation (Imprint's own hook output among it) and trims tool outputs.

`~/.claude/projects/<cwd-slug>/<session>.jsonl` holds one JSON object a line: `user` lines
(a prompt, or the results of tool calls), `assistant` lines (text, thinking, tool calls), and
lines that are not the conversation: `attachment` (every hook's stdout, Imprint's own
briefing among them: never captured back), `system`, `summary`, `file-history-snapshot`,
`queue-operation`, meta and compaction-summary messages. Only complete lines are read: a
last line still being written is left for the next capture, whose offset starts at it.

A turn is a prompt and everything up to the next prompt; a read that starts mid-turn (the
previous capture ended there) gives a turn without a prompt. Tool outputs are trimmed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO, Protocol

__all__ = [
    "MAX_READ_BYTES",
    "Batch",
    "ClaudeCodeReader",
    "LineReader",
    "ToolCall",
    "Turn",
    "TurnsReader",
    "clip",
    "echo_free",
    "imprint_tool",
    "read_lines",
    "timestamp",
]

MAX_READ_BYTES = 8 * 1024 * 1024  # one capture reads at most this; the next goes on
TOOL_OUTPUT_CHARS = 600
TOOL_INPUT_CHARS = 300
TEXT_CHARS = 4_000
# Text a client or a hook put into the conversation, not what the user typed.
_INJECTED = re.compile(
    r"<(system-reminder|user-prompt-submit-hook|session-start-hook|local-command-stdout|"
    r"command-message|command-args)>.*?</\1>",
    re.DOTALL,
)
# Imprint's own tools as each client names them: Claude Code `mcp__imprint__search` (or,
# installed as a plugin, `mcp__plugin_imprint_imprint__search`), Codex `imprint.search` or
# `mcp__imprint__search`, Gemini CLI `mcp_imprint_search`. Their outputs are what Imprint
# already holds: captured back, they would outrank the memory they repeat.
_IMPRINT_TOOL = re.compile(
    r"^(?:mcp__(?:plugin_[a-z0-9_-]*?_)?imprint__|imprint[.:/]|mcp_imprint_|imprint__)",
    re.IGNORECASE,
)
# Imprint's briefing and prompt context (`imprint.hooklib.compose`, `imprint.reads.briefing`)
# where a client copied them into the conversation's text: from the head to the foot line.
_BRIEFING_ECHO = re.compile(
    r"^Imprint (?:memory for project|memories of project) .*?(?:^For more: search\(.*?$|\Z)",
    re.DOTALL | re.MULTILINE,
)
_SKIPPED_TYPES = frozenset(
    {"attachment", "system", "summary", "file-history-snapshot", "queue-operation"}
)


@dataclass
class ToolCall:
    name: str
    input: dict[str, Any]
    output: str = ""
    is_error: bool = False


@dataclass
class Turn:
    key: str  # the uuid (else the byte offset) of its first line: stable across re-reads
    at: float = 0.0  # when its first line was written (epoch seconds; 0 when unknown)
    prompt: str = ""
    texts: list[str] = field(default_factory=list)
    tools: list[ToolCall] = field(default_factory=list)


@dataclass
class Batch:
    turns: list[Turn]
    end: int  # the byte offset after the last complete line read
    # Where the next read starts: `end`, or the first line of the last turn where a format
    # rewrites its messages by appending them again (Gemini CLI): that turn is read again
    # whole next time, and written again in place.
    resume: int = -1

    # Lines over MAX_READ_BYTES passed over, and a Gemini CLI turn whose copies pass it,
    # closed where the read stopped (each a line: what was skipped, at which offset).
    skipped: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.resume < 0:
            self.resume = self.end


def clip(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    return text[:limit].rstrip() + f" [... {len(text) - limit} more characters]"


def imprint_tool(name: str) -> bool:
    """Whether a tool call is one of Imprint's own (any client's naming)."""
    return bool(_IMPRINT_TOOL.match(name))


def echo_free(text: str) -> str:
    """`text` without an Imprint briefing or prompt context a client copied into it."""
    return _BRIEFING_ECHO.sub("", text).strip() if "Imprint memor" in text else text


def timestamp(value: Any) -> float:
    """An ISO 8601 time (`2026-11-02T10:00:00.000Z`) or epoch seconds/ms as epoch seconds;
    0.0 for anything else."""
    if isinstance(value, bool):
        return 0.0
    if isinstance(value, int | float):
        return float(value) / (1000.0 if value > 1e11 else 1.0)
    if not isinstance(value, str) or not value:
        return 0.0
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(str(b.get("text", "")) for b in _blocks(content) if b.get("type") == "text")


def _user_text(text: str) -> str:
    return _INJECTED.sub("", text).strip()


class LineReader(Protocol):
    """One format's reader: fed each complete line's object, it gathers the turns."""

    turns: list[Turn]

    def line(self, obj: dict[str, Any], key: str, start: int) -> None:
        """One complete line's object; `key` names it stably, `start` is its byte offset."""

    def finish(self) -> int | None:
        """Called after the last line of a read: the offset the next read should start
        at, when not after the last line read."""


class TurnsReader:
    """A reader whose turns grow line by line (a prompt opens one) and whose tool calls
    wait in `pending` for their results; the next read starts after the last line."""

    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self.pending: dict[str, ToolCall] = {}

    def _current(self, key: str, at: float = 0.0) -> Turn:
        if not self.turns:
            self.turns.append(Turn(key=key, at=at))
        return self.turns[-1]

    def finish(self) -> int | None:
        return None


class ClaudeCodeReader(TurnsReader):
    def line(self, obj: dict[str, Any], key: str, start: int) -> None:
        kind = obj.get("type")
        if kind in _SKIPPED_TYPES or kind not in ("user", "assistant"):
            return
        if obj.get("isMeta") or obj.get("isCompactSummary") or obj.get("isSidechain"):
            return
        message = obj.get("message")
        if not isinstance(message, dict):
            return
        blocks = _blocks(message.get("content"))
        if kind == "user":
            results = [b for b in blocks if b.get("type") == "tool_result"]
            for b in results:
                call = self.pending.pop(str(b.get("tool_use_id", "")), None)
                if call is not None and not imprint_tool(call.name):
                    call.output = clip(_result_text(b.get("content")), TOOL_OUTPUT_CHARS)
                    call.is_error = bool(b.get("is_error"))
            if results:
                return
            text = echo_free(
                _user_text(
                    "\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
                )
            )
            if text:
                at = timestamp(obj.get("timestamp"))
                self.turns.append(Turn(key=key, at=at, prompt=clip(text, TEXT_CHARS)))
            return
        turn = self._current(key, timestamp(obj.get("timestamp")))
        for b in blocks:
            text = echo_free(str(b.get("text", ""))) if b.get("type") == "text" else ""
            if text.strip():
                turn.texts.append(clip(text, TEXT_CHARS))
            elif b.get("type") == "tool_use":
                raw = b.get("input")
                call = ToolCall(
                    name=str(b.get("name", "tool")), input=raw if isinstance(raw, dict) else {}
                )
                turn.tools.append(call)
                self.pending[str(b.get("id", ""))] = call


def _past_line(handle: BinaryIO, at: int) -> int:
    """The offset after the newline that ends the line going on at `at`; -1 when the file
    ends first (the line is still being written)."""
    handle.seek(at)
    while piece := handle.read(1024 * 1024):
        found = piece.find(b"\n")
        if found >= 0:
            return at + found + 1
        at += len(piece)
    return -1


def read_lines(path: Path, offset: int, reader: LineReader) -> Batch:
    """The turns of the complete lines from `offset` on (at most MAX_READ_BYTES of them), read
    by `reader` (one format's: `imprint.capture.formats.read_new` picks it). A file shorter
    than `offset` (replaced, or cut) is read again from its start. A complete line over
    MAX_READ_BYTES is passed over and named in `skipped`: the read goes on after it, so one
    huge line (a tool's output) never stops capture."""
    skipped: list[str] = []
    with path.open("rb") as handle:
        size = handle.seek(0, 2)
        if offset > size:
            offset = 0
        handle.seek(offset)
        data = handle.read(MAX_READ_BYTES)
        while len(data) == MAX_READ_BYTES and b"\n" not in data:
            after = _past_line(handle, offset + len(data))
            if after < 0:
                break
            skipped.append(f"a line of {after - offset} bytes at offset {offset}")
            offset = after
            handle.seek(offset)
            data = handle.read(MAX_READ_BYTES)
    limited = len(data) == MAX_READ_BYTES
    cut = data.rfind(b"\n")
    if cut < 0:
        return Batch(turns=[], end=offset, skipped=skipped)
    data = data[: cut + 1]
    at = offset
    for raw in data.splitlines(keepends=True):
        start, at = at, at + len(raw)
        try:
            obj = json.loads(raw)
        except ValueError:
            continue  # a damaged line: the rest of the transcript still counts
        if isinstance(obj, dict):
            reader.line(obj, str(obj.get("uuid") or f"offset-{start}"), start)
    resume = reader.finish()
    end = offset + len(data)
    if resume is not None and resume <= offset and limited:
        # The open turn alone (Gemini CLI's copies of its messages) fills a whole read: read
        # from its start again, it never ends. It is closed as far as this read got; what
        # comes after is read as new.
        skipped.append(f"a turn of over {MAX_READ_BYTES} bytes at offset {offset}, closed there")
        resume = None
    return Batch(
        turns=reader.turns, end=end, resume=end if resume is None else resume, skipped=skipped
    )
