"""Anthropic's Messages API over httpx, streamed; a JSON schema becomes a forced tool call."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx

from imprint.providers._base import (
    ChatMessage,
    ProviderError,
    api_key,
    effective_base_url,
    post_stream,
    sse_data,
)

__all__ = ["AnthropicProvider"]

API_VERSION = "2023-06-01"


class AnthropicProvider:
    name = "anthropic"

    def __init__(self, base_url: str, model: str, key: str = "") -> None:
        self.base_url = effective_base_url(self.name, base_url)
        if not model:
            raise ProviderError("tagger.model: required for provider anthropic")
        self.model = model
        self.key = api_key(key, ("ANTHROPIC_API_KEY",))
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
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens,
            "temperature": 0,
            "stream": True,
            "messages": [m for m in messages if m["role"] != "system"],
        }
        if system:
            body["system"] = system
        if schema is not None:
            body["tools"] = [
                {"name": "answer", "description": "Give the answer.", "input_schema": schema}
            ]
            body["tool_choice"] = {"type": "tool", "name": "answer"}
        headers = {"x-api-key": self.key, "anthropic-version": API_VERSION}
        with post_stream(
            self._client,
            self.name,
            f"{self.base_url}/v1/messages",
            deadline=deadline,
            body=body,
            headers=headers,
        ) as response:
            for event in sse_data(response):
                if event.get("type") == "error":
                    raise ProviderError(f"anthropic: {event.get('error')}")
                if event.get("type") != "content_block_delta":
                    continue
                delta = event.get("delta") or {}
                piece = delta.get("text") or delta.get("partial_json")
                if piece:
                    yield piece

    def close(self) -> None:
        self._client.close()
