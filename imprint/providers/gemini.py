"""Google's Gemini API over httpx: streamGenerateContent as server-sent events."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from imprint.providers._base import ChatMessage, HttpProvider, sse_data

__all__ = ["GeminiProvider"]


class GeminiProvider(HttpProvider):
    name = "gemini"
    key_env = ("GEMINI_API_KEY", "GOOGLE_API_KEY")

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
        with self._post(
            f"/v1beta/models/{self.model}:streamGenerateContent",
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
