"""A scripted model API on 127.0.0.1 for driving a real coding agent headless: it records
each request body and answers with scripted turns, streamed the way the real API streams.

Anthropic's Messages API (`POST /v1/messages`, what Claude Code calls at
`ANTHROPIC_BASE_URL`): with `"stream": true` the answer is server-sent events, `message_start`,
then per content block `content_block_start`, its deltas (`text_delta`, or `input_json_delta`
for a tool call's input) and `content_block_stop`, then `message_delta` (the stop reason) and
`message_stop`; without it, the message as one JSON object.

Which scripted turn answers a request is decided by the request itself, not by how many came
before: the agent's requests (they carry its tools) get the turn numbered by how many assistant
messages the conversation already holds, so a retried request gets the same answer; the
client's side requests (a title, a topic: no tools) get a short text.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Recorded", "ScriptedModel", "scripted_model", "text", "tool_use"]

Block = dict[str, Any]
Reply = tuple[int, str, bytes]  # status, content type, body
_ids = itertools.count(1)


def text(words: str) -> Block:
    return {"type": "text", "text": words}


def tool_use(name: str, arguments: dict[str, Any]) -> Block:
    return {"type": "tool_use", "id": f"toolu_{next(_ids):04d}", "name": name, "input": arguments}


@dataclass
class Recorded:
    path: str
    body: dict[str, Any]


@dataclass
class ScriptedModel:
    """The turns the agent's requests get, in conversation order, and every request seen."""

    turns: list[list[Block]] = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)
    url: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def agent_requests(self) -> list[dict[str, Any]]:
        """The bodies of the requests that carried the agent's tools."""
        with self._lock:
            return [r.body for r in self.requests if r.body.get("tools")]

    def record(self, path: str, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(Recorded(path, body))

    def answer(self, body: dict[str, Any]) -> tuple[list[Block], str]:
        """The content and stop reason for one request."""
        if not body.get("tools"):
            return [text("Scripted session")], "end_turn"
        done = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        blocks = self.turns[done] if done < len(self.turns) else [text("Done.")]
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        return blocks, stop


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def _stream(message: dict[str, Any], blocks: list[Block], stop: str) -> Iterator[bytes]:
    yield _event("message_start", {"type": "message_start", "message": message})
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            start: Block = {"type": "text", "text": ""}
            delta: Block = {"type": "text_delta", "text": block["text"]}
        else:
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        yield _event(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        )
        yield _event(
            "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        )
        yield _event("content_block_stop", {"type": "content_block_stop", "index": index})
    yield _event(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 10},
        },
    )
    yield _event("message_stop", {"type": "message_stop"})


def _route(model: ScriptedModel, path: str, body: dict[str, Any]) -> Reply:
    if path.endswith("/count_tokens"):
        return 200, "application/json", b'{"input_tokens": 100}'
    if not path.endswith("/v1/messages"):
        return 404, "application/json", b'{"type":"error"}'
    blocks, stop = model.answer(body)
    message = {
        "id": f"msg_{next(_ids):04d}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "scripted"),
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": 1},
    }
    if not body.get("stream"):
        whole = {**message, "content": blocks, "stop_reason": stop}
        return 200, "application/json", json.dumps(whole).encode()
    return 200, "text/event-stream", b"".join(_stream(message, blocks, stop))


@contextmanager
def scripted_model(turns: list[list[Block]]) -> Iterator[ScriptedModel]:
    """A ScriptedModel answering on a free loopback port (its `url`) until the block ends."""
    from tests.support.scripted_http import serve

    with serve(ScriptedModel(turns=turns), _route) as model:
        yield model
