"""Fakes in one place: a provider whose prompt and token timing the test controls, and a clock."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

from imprint.providers import ChatMessage, ProviderError


class FakeClock:
    """A monotonic clock that moves only when the test says so."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self.now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds


class FakeProvider:
    """Streams `tokens`. `prompt_gate` holds prompt processing; `token_gates[i]` holds token i.

    Records every call, whether its stream was closed, and the most calls ever inside
    `stream` at once (the real model crashes at two).
    """

    name = "fake"

    def __init__(
        self,
        tokens: list[str] | None = None,
        *,
        prompt_gate: threading.Event | None = None,
        token_gates: list[threading.Event] | None = None,
        fail: str = "",
        responses: list[list[str]] | None = None,
        call_gates: list[threading.Event | None] | None = None,
        clock: FakeClock | None = None,
        seconds_per_token: float = 0.0,
    ) -> None:
        self.tokens = tokens if tokens is not None else ["fake ", "answer"]
        self.responses = list(responses or [])  # per call, in order; then `tokens`
        self.call_gates = list(call_gates or [])  # per call, in order: holds that prompt
        self.prompt_gate = prompt_gate
        self.token_gates = token_gates or []
        self.fail = fail
        # With a clock: prompt processing moves it by seconds_per_token per prompt token.
        self.clock = clock
        self.seconds_per_token = seconds_per_token
        self.calls: list[dict[str, Any]] = []
        self.prompt_started = threading.Event()
        self.prompt_finished = threading.Event()
        self.closed: list[bool] = []
        self.loaded = True
        self._inside = 0
        self.max_inside = 0
        self._lock = threading.Lock()

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
        with self._lock:
            self._inside += 1
            self.max_inside = max(self.max_inside, self._inside)
            self.calls.append(
                {
                    "messages": messages,
                    "schema": schema,
                    "deadline": deadline,
                    "started": time.monotonic(),
                    "grammar": grammar,
                    "pin": pin,
                }
            )
        finished = False
        try:
            self.prompt_started.set()
            with self._lock:
                held = self.call_gates.pop(0) if self.call_gates else self.prompt_gate
            if held is not None:
                assert held.wait(timeout=30), "prompt gate never opened"
            if self.clock is not None:
                self.clock.advance(self.count_tokens(messages) * self.seconds_per_token)
            self.prompt_finished.set()
            if self.fail:
                raise ProviderError(self.fail)
            with self._lock:
                tokens = self.responses.pop(0) if self.responses else self.tokens
            for i, token in enumerate(tokens):
                if i < len(self.token_gates):
                    assert self.token_gates[i].wait(timeout=30), f"token gate {i} never opened"
                yield token
            finished = True
        finally:
            with self._lock:
                self._inside -= 1
                self.closed.append(not finished)

    def count_tokens(self, messages: list[ChatMessage]) -> int:
        """One token a word: tests size prompts in words."""
        return sum(len(m["content"].split()) for m in messages)

    def close(self) -> None:
        self.loaded = False
