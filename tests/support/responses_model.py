"""A scripted OpenAI Responses API on 127.0.0.1, for driving Codex headless (`codex exec`
with a model provider whose `base_url` is this server and `wire_api = "responses"`).

`POST <base_url>/responses` with `"stream": true` is answered with server-sent events the way
Codex 0.171 reads them: `response.created`, one `response.output_item.done` per output item
(a `message` with `output_text`, or a `function_call` with its JSON `arguments` and a
`call_id`), then `response.completed` with the usage. Which scripted turn answers is decided
by the request: the number of tool results (`function_call_output`) its input already holds,
so a retried request gets the same answer. Every request body is recorded.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.support.model_server import Block, ScriptedModel
from tests.support.scripted_http import NOT_FOUND, Reply, serve

__all__ = ["function_call", "message", "scripted_responses"]

_ids = itertools.count(1)


def message(words: str) -> Block:
    content = [{"type": "output_text", "text": words}]
    return {"type": "message", "role": "assistant", "content": content}


def function_call(name: str, arguments: dict[str, Any]) -> Block:
    return {"type": "function_call", "name": name, "arguments": json.dumps(arguments)}


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n".encode()


def _answer(model: ScriptedModel, body: dict[str, Any]) -> bytes:
    items = body.get("input") or []
    done = sum(1 for i in items if isinstance(i, dict) and i.get("type") == "function_call_output")
    blocks = model.turns[done] if done < len(model.turns) else [message("Done.")]
    response_id = f"resp_{next(_ids):04d}"
    out = [_event("response.created", {"response": {"id": response_id}})]
    for block in blocks:
        item = {**block, "id": f"item_{next(_ids):04d}"}
        if item["type"] == "function_call":
            item["call_id"] = f"call_{next(_ids):04d}"
        out.append(_event("response.output_item.done", {"item": item}))
    usage = {"input_tokens": 100, "output_tokens": 10, "total_tokens": 110}
    out.append(_event("response.completed", {"response": {"id": response_id, "usage": usage}}))
    return b"".join(out)


def _route(model: ScriptedModel, path: str, body: dict[str, Any]) -> Reply:
    if not path.endswith("/responses"):
        return NOT_FOUND
    return 200, "text/event-stream", _answer(model, body)


@contextmanager
def scripted_responses(turns: list[list[Block]]) -> Iterator[ScriptedModel]:
    """A ScriptedModel answering the Responses API on a free loopback port (its `url`, the
    provider's `base_url`) until the block ends."""
    with serve(ScriptedModel(turns=turns), _route, suffix="/v1") as model:
        yield model
