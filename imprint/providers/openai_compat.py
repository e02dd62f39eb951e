"""OpenAI-compatible chat completions over httpx: vllm, openai, and ollama's own API.

The remaining time until the deadline is each request's timeout.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from imprint.providers._base import ChatMessage, HttpProvider, ProviderError, api_key, sse_data

__all__ = ["OllamaProvider", "OpenAIProvider", "VllmProvider"]


class _ChatCompletions(HttpProvider):
    """POST {base}/v1/chat/completions with stream=true; JSON schema as response_format."""

    name = "openai-compatible"
    needs_base_url = True
    # How the server takes a JSON schema: OpenAI's `json_schema` (vLLM, ollama, llama.cpp's
    # llama-server), or `json_object` with a `schema` (llama-cpp-python's own server, which
    # refuses `json_schema`). A refusal naming response_format switches once per client.
    schema_style = "json_schema"

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"} if self.key else {}

    def _body(
        self, messages: list[ChatMessage], schema: dict[str, Any] | None, max_tokens: int
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "stream": True,
            "temperature": 0,
            "max_tokens": max_tokens,
        }
        if self.schema_style == "json_object":
            # llama-cpp-python's server penalises repeats by default (1.1), which bends
            # greedy output: under the plan schema SmolLM2 then wrote invalid JSON in 2 of 3
            # plans (benchmark/live_server.py); 1.0 makes it greedy like the local provider.
            body["repeat_penalty"] = 1.0
        if schema is not None and self.schema_style == "json_object":
            body["response_format"] = {"type": "json_object", "schema": schema}
        elif schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": schema, "strict": True},
            }
        return body

    def stream(
        self,
        messages: list[ChatMessage],
        *,
        deadline: float,
        schema: dict[str, Any] | None = None,
        max_tokens: int = 256,
        grammar: str | None = None,
        pin: bool = False,
    ) -> Iterator[str]:
        started = False
        try:
            for piece in self._stream_once(messages, deadline, schema, max_tokens):
                started = True
                yield piece
        except ProviderError as exc:
            refused = "response_format" in str(exc) and " HTTP " in str(exc)
            if started or schema is None or self.schema_style != "json_schema" or not refused:
                raise
            self.schema_style = "json_object"
            yield from self._stream_once(messages, deadline, schema, max_tokens)

    def _stream_once(
        self,
        messages: list[ChatMessage],
        deadline: float,
        schema: dict[str, Any] | None,
        max_tokens: int,
    ) -> Iterator[str]:
        with self._post(
            "/v1/chat/completions",
            deadline=deadline,
            body=self._body(messages, schema, max_tokens),
            headers=self._headers(),
        ) as response:
            for event in sse_data(response):
                for choice in event.get("choices", []):
                    piece = (choice.get("delta") or {}).get("content")
                    if piece:
                        yield piece


class VllmProvider(_ChatCompletions):
    """vLLM's OpenAI-compatible server; `response_format` json_schema is guided decoding."""

    name = "vllm"

    def _body(
        self, messages: list[ChatMessage], schema: dict[str, Any] | None, max_tokens: int
    ) -> dict[str, Any]:
        body = super()._body(messages, schema, max_tokens)
        if schema is not None:
            body["guided_json"] = schema  # older vLLM releases read this field instead
        return body


class OpenAIProvider(_ChatCompletions):
    name = "openai"
    key_env = ("OPENAI_API_KEY",)

    def __init__(self, base_url: str, model: str, key: str = "") -> None:
        # The key is checked before the model here, as it always was for openai.
        super().__init__(base_url, model, api_key(key, self.key_env))


class OllamaProvider(HttpProvider):
    """Ollama's own /api/chat: NDJSON stream, and `format` carries the JSON schema."""

    name = "ollama"

    def stream(
        self,
        messages: list[ChatMessage],
        *,
        deadline: float,
        schema: dict[str, Any] | None = None,
        max_tokens: int = 256,
        grammar: str | None = None,
        pin: bool = False,
    ) -> Iterator[str]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "stream": True,
            "options": {"temperature": 0, "num_predict": max_tokens},
        }
        if schema is not None:
            body["format"] = schema
        with self._post("/api/chat", deadline=deadline, body=body) as response:
            for line in response.iter_lines():
                if not line.strip():
                    continue
                event = json.loads(line)
                if event.get("error"):
                    raise ProviderError(f"ollama: {event['error']}")
                piece = (event.get("message") or {}).get("content")
                if piece:
                    yield piece
                if event.get("done"):
                    return
