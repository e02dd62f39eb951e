"""A turn as the text that is stored, and the session summary, by rule (no model).

The summary gathers, over every turn captured so far: what was asked, files touched,
commands run, errors and what followed them, and decisions stated. Each capture adds its
turns to the `Notes` kept in the session's state and writes the summary again, in place.
All text here is redacted already (`imprint.capture.session` redacts each turn first).
"""

from __future__ import annotations

import re

from pydantic import BaseModel

from imprint._shown import counted
from imprint.capture.transcript import ToolCall, Turn

__all__ = ["Notes", "render_turn", "summary_text"]

# Claude Code's file tools, then Gemini CLI's (Codex edits through apply_patch's patch text).
_FILE_TOOLS = {"Edit", "Write", "MultiEdit", "NotebookEdit", "Read", "apply_patch"} | {
    "read_file", "write_file", "replace", "edit"
}  # fmt: skip
_COMMAND_TOOLS = {"Bash", "shell", "run_shell_command", "exec_command"}
_DECISION = re.compile(
    r"(?i)\b(?:decided|decision|we(?:'ll| will) (?:use|go with|keep)|i(?:'ll| will) "
    r"(?:use|go with|keep)|let's (?:use|go with|keep)|going with|chose|choose to|"
    r"instead of|the fix (?:is|was)|fixed (?:it|this|the) by|root cause)\b"
)
# A sentence that says a decision was stored or noted (the assistant called Imprint's
# `store`, or a note-taking tool) reports an action: it states no decision of its own.
_RECORDED = re.compile(
    r"(?i)^\W*(?:(?:i|we)(?:'ve| have)?\s+)?(?:stored|saved|recorded|noted|logged|"
    r"remembered|added|kept|captured)\b[^.!?]{0,60}\bdecisions?\b"
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
KEEP = {
    "asked": 12, "files": 30, "commands": 20, "errors": 10, "decisions": 12, "concluded": 12
}  # fmt: skip
# How a summary names what a turn concluded (`imprint.capture.observe`'s kinds).
_CONCLUDED = {
    "decision": "Decided", "fix": "Fixed", "preference": "Preference", "fact": "Fact",
    "open": "Open",
}  # fmt: skip


class Notes(BaseModel):
    """What the summary is made of; kept in the session's state between captures."""

    asked: list[str] = []
    files: list[str] = []
    commands: list[str] = []
    errors: list[str] = []  # "error -> what came after it"
    decisions: list[str] = []
    concluded: list[str] = []  # the observations the session's turns stated, by kind
    turns: int = 0
    open_error: str = ""  # the last error no later call has got past yet (even turns later)
    last_turn: str = ""  # the key of the last turn added: a turn read again is not counted

    def add(self, turn: Turn) -> None:
        if turn.key != self.last_turn:
            self.turns += 1
            self.last_turn = turn.key
        if turn.prompt:
            self._keep("asked", _line(turn.prompt, 160))
        for call in turn.tools:
            path = _path(call)
            if path:
                self._keep("files", path)
            command = _command(call)
            if command:
                self._keep("commands", _line(command, 160))
            if call.is_error:
                # What failed, never its output: a script's output is text anyone could
                # have written (to steer the next session's assistant), and the summary
                # is briefed. The output stays in the session's own turn records.
                error = f"{_line(_describe(call), 140)} failed"
                if self.open_error and self.open_error != error:
                    self._keep("errors", self.open_error)
                self.open_error = error
            elif self.open_error:
                # The next call that worked after an error: how it was got past.
                self._keep("errors", f"{self.open_error} -> then {_describe(call)}")
                self.open_error = ""
        for text in turn.texts:
            for sentence in _SENTENCE.split(text):
                if (
                    _DECISION.search(sentence)
                    and 20 <= len(sentence) <= 300
                    and not _RECORDED.search(sentence)
                ):
                    self._keep("decisions", _line(sentence, 220))

    def conclude(self, kind: str, text: str) -> None:
        """An observation a turn stated (a decision, a fix, ...): the summary leads with it."""
        label = _CONCLUDED.get(kind, kind)
        said = text if text.lower().startswith(label.lower()) else f"{label}: {text}"
        self._keep("concluded", _line(said, 220))

    def _keep(self, name: str, value: str) -> None:
        items: list[str] = getattr(self, name)
        if value and value not in items:
            items.append(value)
            del items[: max(0, len(items) - KEEP[name])]  # the newest are kept


def _line(text: str, limit: int) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1].rstrip() + "…"


def _path(call: ToolCall) -> str:
    if call.name not in _FILE_TOOLS:
        return ""
    for key in ("file_path", "path", "notebook_path"):
        value = call.input.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def _command(call: ToolCall) -> str:
    if call.name not in _COMMAND_TOOLS:
        return ""
    value = call.input.get("command", call.input.get("cmd"))  # Codex's exec_command: cmd
    if isinstance(value, list):
        value = " ".join(str(v) for v in value)
    return value if isinstance(value, str) else ""


def _describe(call: ToolCall) -> str:
    return (_path(call) and f"{call.name} {_path(call)}") or _command(call) or call.name


def _input_line(call: ToolCall) -> str:
    shown = _command(call) or _path(call)
    if not shown:
        shown = " ".join(f"{k}={v}" for k, v in call.input.items() if isinstance(v, str | int))
    return _line(shown, 300)


def render_turn(turn: Turn) -> str:
    """The turn as stored: the prompt, the assistant's text, each tool call with its
    (trimmed) output."""
    parts = []
    if turn.prompt:
        parts.append(f"User: {turn.prompt}")
    for text in turn.texts:
        parts.append(f"Assistant: {text}")
    for call in turn.tools:
        head = f"Tool {call.name}: {_input_line(call)}"
        if call.output:
            mark = "error" if call.is_error else "output"
            head += f"\n  {mark}: {call.output}"
        parts.append(head)
    return "\n".join(parts)


def _said(line: str, decisions: list[str]) -> bool:
    """Whether a concluded line is a decision the summary already states."""
    body = line.split(": ", 1)[-1].rstrip("…")
    return any(body[:80] in d or d.rstrip("…")[:80] in body for d in decisions)


def summary_text(session_id: str, project: str, notes: Notes) -> str:
    """The summary memory's content: one line per kind of note that has any, what holds
    beyond the session first (decisions, then errors and their fixes: a briefing clips a
    summary to its first line or two), then what was asked, touched and run."""
    lines = [
        f"Session in project {project or '-'} ({counted(notes.turns, 'turn')}, id {session_id}):"
    ]
    sections = (
        ("Concluded", [c for c in notes.concluded if not _said(c, notes.decisions)]),
        ("Decisions stated", notes.decisions),
        (
            "Errors and what followed",
            [*notes.errors, *([notes.open_error] if notes.open_error else [])],
        ),
        ("Asked", notes.asked),
        ("Files touched", notes.files),
        ("Commands run", notes.commands),
    )
    for title, items in sections:
        if items:
            lines.append(f"{title}:")
            lines.extend(f"- {item}" for item in items)
    return "\n".join(lines)
