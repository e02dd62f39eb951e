"""OpenAI-compatible chat completions over httpx: vllm, openai, and ollama's own API.

The remaining time until the deadline is each request's timeout.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx

from imprint.providers._base import (
    ChatMessage,
    ProviderError,
    api_key,
    post_stream,
    sse_data,
)

__all__ = ["OllamaProvider", "OpenAIProvider", "VllmProvider"]


class _ChatCompletions:
    """POST {base}/v1/chat/completions with stream=true; JSON schema as response_format."""

    name = "openai-compatible"
    default_base = ""
    key_env: tuple[str, ...] = ()

    def __init__(self, base_url: str, model: str, key: str = "") -> None:
        self.base_url = (base_url or self.default_base).rstrip("/")
        if not self.base_url:
            raise ProviderError(f"tagger.base_url: required for provider {self.name}")
        if not model:
            raise ProviderError(f"tagger.model: required for provider {self.name}")
        self.model = model
        self.key = key
        self._client = httpx.Client()

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
        if schema is not None:
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
        with post_stream(
            self._client,
            self.name,
            f"{self.base_url}/v1/chat/completions",
            deadline=deadline,
            body=self._body(messages, schema, max_tokens),
            headers=self._headers(),
        ) as response:
            for event in sse_data(response):
                for choice in event.get("choices", []):
                    piece = (choice.get("delta") or {}).get("content")
                    if piece:
                        yield piece

    def close(self) -> None:
        self._client.close()


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
    default_base = "https://api.openai.com"
    key_env = ("OPENAI_API_KEY",)

    def __init__(self, base_url: str, model: str, key: str = "") -> None:
        super().__init__(base_url, model, api_key(key, self.key_env))


class OllamaProvider:
    """Ollama's own /api/chat: NDJSON stream, and `format` carries the JSON schema."""

    name = "ollama"

    def __init__(self, base_url: str, model: str) -> None:
        self.base_url = (base_url or "http://127.0.0.1:11434").rstrip("/")
        if not model:
            raise ProviderError("tagger.model: required for provider ollama")
        self.model = model
        self._client = httpx.Client()

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
        with post_stream(
            self._client, self.name, f"{self.base_url}/api/chat", deadline=deadline, body=body
        ) as response:
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

    def close(self) -> None:
        self._client.close()
