"""Google's Gemini API over httpx: streamGenerateContent as server-sent events."""

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

__all__ = ["GeminiProvider"]


class GeminiProvider:
    name = "gemini"

    def __init__(self, base_url: str, model: str, key: str = "") -> None:
        self.base_url = effective_base_url(self.name, base_url)
        if not model:
            raise ProviderError("tagger.model: required for provider gemini")
        self.model = model
        self.key = api_key(key, ("GEMINI_API_KEY", "GOOGLE_API_KEY"))
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
            "contents": [
                {
                    "role": "model" if m["role"] == "assistant" else "user",
                    "parts": [{"text": m["content"]}],
                }
                for m in messages
                if m["role"] != "system"
            ],
            "generationConfig": {"temperature": 0, "maxOutputTokens": max_tokens},
        }
        if system:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        if schema is not None:
            body["generationConfig"]["responseMimeType"] = "application/json"
            body["generationConfig"]["responseJsonSchema"] = schema
        url = f"{self.base_url}/v1beta/models/{self.model}:streamGenerateContent"
        with post_stream(
            self._client,
            self.name,
            url,
            deadline=deadline,
            body=body,
            headers={"x-goog-api-key": self.key},
            params={"alt": "sse"},
        ) as response:
            for event in sse_data(response):
                for candidate in event.get("candidates", []):
                    for part in (candidate.get("content") or {}).get("parts", []):
                        if part.get("text"):
                            yield part["text"]

    def close(self) -> None:
        self._client.close()
