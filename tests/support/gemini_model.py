"""A scripted Gemini API on 127.0.0.1, for driving Gemini CLI headless (`gemini -p` with
`GOOGLE_GEMINI_BASE_URL` set to this server and a dummy `GEMINI_API_KEY`).

`POST /v1beta/models/<model>:streamGenerateContent?alt=sse` is answered with one server-sent
event holding a whole `GenerateContentResponse` (a candidate whose parts are `text` or
`functionCall`), `:generateContent` with the same object as JSON, `:countTokens` with a
count. The agent's requests (they carry its `tools`) get the scripted turn numbered by how
many `model` turns the conversation already holds, so a retried request gets the same
answer; Gemini CLI's side requests (the model router, the next-speaker check: no tools) get
a JSON text that hands the turn back to the user. Every request body is recorded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.support.model_server import Block, ScriptedModel
from tests.support.scripted_http import NOT_FOUND, Reply, serve

__all__ = ["call", "scripted_gemini", "words"]

_SIDE = {"reasoning": "the scripted turn is over", "next_speaker": "user"}


def words(text: str) -> Block:
    return {"text": text}


def call(name: str, args: dict[str, Any]) -> Block:
    return {"functionCall": {"name": name, "args": args}}


def _answer(model: ScriptedModel, body: dict[str, Any]) -> dict[str, Any]:
    if body.get("tools"):
        done = sum(1 for c in body.get("contents", []) if c.get("role") == "model")
        parts = model.turns[done] if done < len(model.turns) else [words("Done.")]
    else:
        parts = [words(json.dumps(_SIDE))]
    candidate = {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
    usage = {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110}
    return {"candidates": [candidate], "usageMetadata": usage}


def _route(model: ScriptedModel, path: str, body: dict[str, Any]) -> Reply:
    if path.endswith(":countTokens"):
        return 200, "application/json", b'{"totalTokens": 100}'
    if path.endswith(":streamGenerateContent"):
        return (
            200,
            "text/event-stream",
            f"data: {json.dumps(_answer(model, body))}\r\n\r\n".encode(),
        )
    if path.endswith(":generateContent"):
        return 200, "application/json", json.dumps(_answer(model, body)).encode()
    return NOT_FOUND


@contextmanager
def scripted_gemini(turns: list[list[Block]]) -> Iterator[ScriptedModel]:
    """A ScriptedModel answering the Gemini API on a free loopback port (its `url`, for
    GOOGLE_GEMINI_BASE_URL) until the block ends."""
    with serve(ScriptedModel(turns=turns), _route) as model:
        yield model
