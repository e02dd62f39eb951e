"""Reading a Gemini CLI chat file (`~/.gemini/tmp/<project>/chats/session-<time>-<id>.jsonl`).

Gemini CLI 0.61 appends one JSON object a line: the session's metadata first, then message
records (`id`, `type` `user` | `gemini` | `info` | `error` | `warning`, `content`), `$set`
metadata updates and `$rewindTo` (the messages from that id on were undone). A message is
appended again each time it changes (a `gemini` message gains its `toolCalls`, each with its
`result` and `status`), so within a read the last copy of each id counts, in the place its
first copy had. A `user` message may be the results of tool calls (`functionResponse` parts:
the calls' own records carry them) or text; Gemini CLI wraps what hooks add
(`<hook_context>`, Imprint's briefing among it) and its own `<session_context>` in tags,
which are left out.
"""

from __future__ import annotations

import re
from typing import Any

from imprint.capture.transcript import (
    TEXT_CHARS,
    TOOL_OUTPUT_CHARS,
    ToolCall,
    Turn,
    clip,
    echo_free,
    imprint_tool,
    timestamp,
)

__all__ = ["GeminiReader"]

_INJECTED = re.compile(r"<(hook_context|session_context)>.*?</\1>", re.DOTALL)
_UNTRUSTED = re.compile(r"</?untrusted_context>")
_EXIT = re.compile(r"Exit Code:\s*(-?\d+)")
# run_shell_command's output: `Output: ...`, then `Exit Code: N` (when not 0) and the
# process group; the output is kept, and the exit code after it.
_SHELL_NOISE = re.compile(r"^(?:Output: |Process Group PGID: \d+$)", re.MULTILINE)


def _parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"text": content}]
    if isinstance(content, dict):
        return [content]
    if isinstance(content, list):
        return [p if isinstance(p, dict) else {"text": str(p)} for p in content]
    return []


def _text(content: Any) -> str:
    return "\n".join(str(p["text"]) for p in _parts(content) if isinstance(p.get("text"), str))


def _result(call: dict[str, Any]) -> tuple[str, bool]:
    """A tool call's output as text, and whether it failed (an error status, or a shell
    command's non-zero exit code, which Gemini CLI records as a success)."""
    texts: list[str] = []
    for part in _parts(call.get("result")):
        response = part.get("functionResponse")
        answer = response.get("response") if isinstance(response, dict) else None
        if isinstance(answer, dict):
            texts.extend(str(answer[k]) for k in ("output", "error") if k in answer)
    text = _SHELL_NOISE.sub("", _UNTRUSTED.sub("", "\n".join(texts))).strip()
    code = _EXIT.search(text)
    failed = call.get("status") in ("error", "cancelled") or (
        code is not None and int(code.group(1)) != 0
    )
    return text, failed


class GeminiReader:
    """The turns of a stretch of a Gemini CLI chat file."""

    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self._messages: dict[str, dict[str, Any]] = {}  # by id, in first-seen order
        self._starts: dict[str, int] = {}  # each message's first line's offset

    def line(self, obj: dict[str, Any], key: str, start: int) -> None:
        rewind = obj.get("$rewindTo")
        if isinstance(rewind, str):
            ids = list(self._messages)
            for undone in ids[ids.index(rewind) :] if rewind in ids else []:
                del self._messages[undone]
            return
        if isinstance(obj.get("id"), str) and obj.get("type") in ("user", "gemini"):
            self._messages[obj["id"]] = obj
            self._starts.setdefault(obj["id"], start)

    def finish(self) -> int | None:
        """The turns; the next read starts at the last prompt's line (a later line may
        append that turn's messages again, changed)."""
        for message in self._messages.values():
            key = str(message["id"])
            if message["type"] == "user":
                text = echo_free(_INJECTED.sub("", _text(message.get("content"))).strip())
                at = timestamp(message.get("timestamp"))
                if text:
                    self.turns.append(Turn(key=key, at=at, prompt=clip(text, TEXT_CHARS)))
                continue
            if not self.turns:
                self.turns.append(Turn(key=key, at=timestamp(message.get("timestamp"))))
            turn = self.turns[-1]
            text = echo_free(_text(message.get("content")).strip())
            if text:
                turn.texts.append(clip(text, TEXT_CHARS))
            for raw in message.get("toolCalls") or []:
                if not isinstance(raw, dict):
                    continue
                args = raw.get("args")
                name = str(raw.get("name") or "tool")
                output, failed = ("", False) if imprint_tool(name) else _result(raw)
                turn.tools.append(
                    ToolCall(
                        name=name,
                        input=args if isinstance(args, dict) else {},
                        output=clip(output, TOOL_OUTPUT_CHARS),
                        is_error=failed,
                    )
                )
        prompts = [t.key for t in self.turns if t.prompt]
        return self._starts[prompts[-1]] if prompts else None
