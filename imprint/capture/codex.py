"""Reading a Codex rollout (`~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`).

Codex 0.171 writes one `{"timestamp", "type", "payload"}` object a line. The conversation is
in the `response_item` lines, the items the model API took and gave: `message` (role `user`:
a prompt, or the `<environment_context>` Codex adds; `assistant`: the model's text;
`developer`: instructions, and every hook's added context, Imprint's briefing among it:
never captured back), `function_call` / `custom_tool_call` / `local_shell_call` (a tool call:
`exec_command {"cmd": ...}`, `apply_patch`, `shell {"command": [...]}`) and their
`*_output` lines, joined by `call_id`, and `reasoning` (left out). The other line types
(`session_meta`, `turn_context`, `event_msg`, `world_state`, `token_usage_record`, ...) repeat
or describe the same items and are left out.
"""

from __future__ import annotations

import json
import re
from typing import Any

from imprint.capture.transcript import (
    TEXT_CHARS,
    TOOL_OUTPUT_CHARS,
    ToolCall,
    Turn,
    TurnsReader,
    clip,
    echo_free,
    imprint_tool,
    timestamp,
)

__all__ = ["CodexReader"]

# Text Codex itself puts into a user message: not what the user typed.
_INJECTED = re.compile(
    r"<(environment_context|user_instructions|skills_instructions|turn_aborted|"
    r"user_shell_command|subagent_notification)>.*?</\1>",
    re.DOTALL,
)
_AGENTS_MD = re.compile(r"^# AGENTS\.md instructions for .*", re.DOTALL)
_EXIT = re.compile(r"(?:Process exited with code|Exit code:)\s*(-?\d+)")
# exec_command's output starts with lines about the run (chunk, wall time, exit code, token
# count) before `Output:`; the output is kept, and the exit code after it.
_PREAMBLE = re.compile(r"\AChunk ID:.*?^Output:\n", re.DOTALL | re.MULTILINE)
_CALLS = {"function_call", "custom_tool_call", "local_shell_call"}
_OUTPUTS = {"function_call_output", "custom_tool_call_output"}


def _texts(content: Any, kind: str) -> list[str]:
    if not isinstance(content, list):
        return []
    return [
        str(b.get("text", ""))
        for b in content
        if isinstance(b, dict) and b.get("type") == kind and str(b.get("text", "")).strip()
    ]


def _name(payload: dict[str, Any]) -> str:
    """A call's tool name; an MCP tool's with its server (`namespace`) where Codex gives it
    apart, as `server.tool`."""
    name = str(payload.get("name") or "shell")
    space = payload.get("namespace") or payload.get("server")
    return f"{space}.{name}" if isinstance(space, str) and space and "." not in name else name


def _input(payload: dict[str, Any]) -> dict[str, Any]:
    kind = payload.get("type")
    if kind == "local_shell_call":
        action = payload.get("action")
        return {"command": action.get("command")} if isinstance(action, dict) else {}
    if kind == "custom_tool_call":
        return {"input": str(payload.get("input", ""))}
    try:
        found = json.loads(str(payload.get("arguments") or "{}"))
    except ValueError:
        return {"arguments": str(payload.get("arguments", ""))}
    return found if isinstance(found, dict) else {"arguments": found}


def _output(raw: Any) -> tuple[str, bool]:
    """A call's output as text, and whether the call failed."""
    if isinstance(raw, dict):  # an older rollout: {"content": ..., "success": ...}
        text = str(raw.get("content", ""))
        failed = raw.get("success") is False
    elif isinstance(raw, list):
        text = "\n".join(str(b.get("text", "")) for b in raw if isinstance(b, dict))
        failed = False
    else:
        text, failed = str(raw or ""), False
    code = _EXIT.search(text)
    if code is not None and int(code.group(1)) != 0:
        failed = True
    if code is not None and _PREAMBLE.match(text):
        text = f"{_PREAMBLE.sub('', text).strip()}\n(exit code {code.group(1)})"
    return text, failed


class CodexReader(TurnsReader):
    """The turns of a stretch of a Codex rollout."""

    def line(self, obj: dict[str, Any], key: str, start: int) -> None:
        payload = obj.get("payload")
        if obj.get("type") != "response_item" or not isinstance(payload, dict):
            return
        kind = payload.get("type")
        at = timestamp(obj.get("timestamp"))
        if kind == "message":
            self._message(payload, key, at)
        elif kind in _CALLS:
            call = ToolCall(name=_name(payload), input=_input(payload))
            self._current(key, at).tools.append(call)
            self.pending[str(payload.get("call_id", ""))] = call
        elif kind in _OUTPUTS:
            done = self.pending.pop(str(payload.get("call_id", "")), None)
            if done is not None and not imprint_tool(done.name):
                text, done.is_error = _output(payload.get("output"))
                done.output = clip(text, TOOL_OUTPUT_CHARS)

    def _message(self, payload: dict[str, Any], key: str, at: float) -> None:
        role = payload.get("role")
        content = payload.get("content")
        if role == "user":
            text = "\n".join(_texts(content, "input_text"))
            text = echo_free(_AGENTS_MD.sub("", _INJECTED.sub("", text)).strip())
            if text:
                self.turns.append(Turn(key=key, at=at, prompt=clip(text, TEXT_CHARS)))
        elif role == "assistant":
            texts = [t for t in (echo_free(t) for t in _texts(content, "output_text")) if t]
            if texts:
                self._current(key, at).texts.extend(clip(t, TEXT_CHARS) for t in texts)
