"""Anthropic's Messages API over httpx, streamed; a JSON schema becomes a forced tool call."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from imprint.providers._base import ChatMessage, HttpProvider, ProviderError, sse_data

__all__ = ["AnthropicProvider"]

API_VERSION = "2023-06-01"


class AnthropicProvider(HttpProvider):
    name = "anthropic"
    key_env = ("ANTHROPIC_API_KEY",)

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
        with self._post("/v1/messages", deadline=deadline, body=body, headers=headers) as response:
            for event in sse_data(response):
                if event.get("type") == "error":
                    raise ProviderError(f"anthropic: {event.get('error')}")
                if event.get("type") != "content_block_delta":
                    continue
                delta = event.get("delta") or {}
                piece = delta.get("text") or delta.get("partial_json")
                if piece:
                    yield piece
