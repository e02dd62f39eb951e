"""InferenceActor: the one owner of the provider (and, for `local`, the one model).

Its mailbox is the process's inference lock: tagging, summaries and recall all send it
messages, so no two calls ever reach the model at once. `complete`:

- does not start when its deadline has passed, including after waiting in the mailbox;
- stops at the first piece past the deadline and closes the provider's stream;
- runs to that first piece even if the caller stopped waiting: prompt processing cannot be
  interrupted, so a timed-out prompt finishes in the background and its result is dropped;
- so it does not start a prompt it cannot finish: it keeps each provider's measured prompt
  speed (tokens per second to the first piece, updated as the run goes), estimates a new
  prompt's time from its token count, and skips it (`skipped_cost`) when that estimate runs
  past the deadline. The Completion carries the estimate beside what happened.

The InferenceActor never waits on another actor.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import jsonschema
import pykka
from pydantic import BaseModel, ConfigDict, Field
from pykka.typing import proxy_method

from imprint.actors._trace import Message, traced
from imprint.errors import ImprintError
from imprint.logs import get_logger
from imprint.providers import ChatMessage, Provider, ProviderError
from imprint.types import Outcome

__all__ = [
    "MIN_SPEED_TOKENS",
    "SPEED_TTL_SEC",
    "CompleteRequest",
    "Completion",
    "Inference",
    "InferenceActor",
    "InferenceProxy",
    "PromptSpeed",
    "ask_model",
]

log = get_logger("imprint.inference")


class CompleteRequest(Message):
    """A chat to complete by `deadline` (a time.monotonic() instant)."""

    model_config = ConfigDict(frozen=True)

    kind = "inference.complete"

    messages: tuple[dict[str, str], ...]
    deadline: float
    json_schema: dict[str, Any] | None = Field(default=None)
    max_tokens: int = 256
    purpose: str = "complete"
    fresh: bool = False  # reset the model's cached prompt first (deterministic output)
    grammar: str | None = None  # GBNF the output must follow (local only)
    pin_prefix: bool = False  # keep this prompt's state: later prompts share its prefix


class Completion(BaseModel):
    model_config = ConfigDict(frozen=True)

    text: str = ""
    # ok; skipped_late (never started); skipped_cost (never started: its estimated prompt
    # time runs past the deadline); stopped (at the deadline, mid-stream); timeout (the
    # caller stopped waiting); error (provider); invalid (output breaks the schema)
    outcome: Outcome
    detail: str = ""
    pieces: int = 0
    first_piece_ms: float | None = None
    run_ms: float = 0.0
    data: Any = None  # the parsed JSON, when a schema was given and the output conforms
    prompt_tokens: int | None = None
    estimate_ms: float | None = None  # the prompt's estimated time to the first piece

    @property
    def ok(self) -> bool:
        return self.outcome == Outcome.OK


# A measured speed older than this is not used to skip a prompt: one slow measurement (a
# loaded machine) must not keep the model from ever being measured again.
SPEED_TTL_SEC = 120.0


# Prompts shorter than this do not measure the speed: their time to the first piece is
# mostly fixed cost (sampling, grammar setup), and a few such samples once priced every
# real prompt far too high (a benchmark's one-token resets drove it from 44 to 5 tokens/s).
MIN_SPEED_TOKENS = 64


class PromptSpeed(BaseModel):
    """A provider's measured prompt speed: tokens per second to the first piece, the median
    of the last few prompts (one warm, cached prompt or one busy moment moves it little)."""

    recent: tuple[float, ...]
    at: float  # the clock when last measured

    @property
    def tokens_per_s(self) -> float:
        ordered = sorted(self.recent)
        mid = len(ordered) // 2
        return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2

    def update(self, tokens_per_s: float, at: float) -> PromptSpeed:
        return PromptSpeed(recent=(*self.recent[-4:], tokens_per_s), at=at)


def count_tokens(provider: Provider, messages: list[ChatMessage]) -> int:
    """The provider's own count when it has one; else about 4 characters a token."""
    counter = getattr(provider, "count_tokens", None)
    if counter is not None:
        return int(counter(messages))
    return sum(len(m["content"]) for m in messages) // 4 + 4 * len(messages)


class Inference:
    """The logic, testable without threads; the provider is made on first use."""

    def __init__(
        self, make: Callable[[], Provider], *, clock: Callable[[], float] | None = None
    ) -> None:
        self._make = make
        self._provider: Provider | None = None
        # Read by other threads (device_context) without a message, so that a long prompt,
        # which holds the actor's mailbox, never makes them wait.
        self._busy_lock = threading.Lock()
        self._busy: tuple[float, str] | None = None  # (time.time() it started, purpose)
        # Looked up on each call (not bound here), so a test may replace the module's clock.
        self._clock: Callable[[], float] = clock or (lambda: time.monotonic())
        self.speeds: dict[str, PromptSpeed] = {}  # by provider name, as the run goes

    @property
    def provider(self) -> Provider:
        if self._provider is None:
            self._provider = self._make()
        return self._provider

    @property
    def loaded(self) -> bool:
        return self._provider is not None and bool(getattr(self._provider, "loaded", True))

    def snapshot(self) -> dict[str, Any]:
        """Provider, load state and what the model is doing, at once from any thread."""
        provider = self._provider
        with self._busy_lock:
            busy = self._busy
        return {
            "provider": getattr(provider, "name", "not created"),
            "loaded": self.loaded,
            "load_seconds": getattr(provider, "load_seconds", None),
            "busy_since": busy[0] if busy else None,
            "busy_with": busy[1] if busy else "",
        }

    def complete(self, req: CompleteRequest) -> Completion:
        clock = self._clock
        started = clock()
        if started >= req.deadline:
            return Completion(
                outcome=Outcome.SKIPPED_LATE, detail="the deadline passed before it started"
            )
        with self._busy_lock:
            self._busy = (_wall_clock(), req.purpose)
        try:
            return self._complete(req, started)
        finally:
            with self._busy_lock:
                self._busy = None

    def _complete(self, req: CompleteRequest, started: float) -> Completion:
        clock = self._clock
        try:
            provider = self.provider
            if req.fresh and hasattr(provider, "reset"):
                provider.reset()
            messages = [ChatMessage(role=m["role"], content=m["content"]) for m in req.messages]
            tokens = count_tokens(provider, messages)
            speed = self.speeds.get(provider.name)
            fresh_speed = speed if speed and clock() - speed.at <= SPEED_TTL_SEC else None
            estimate = tokens / fresh_speed.tokens_per_s if fresh_speed else None
            estimate_ms = round(estimate * 1000, 1) if estimate is not None else None
            left = req.deadline - clock()
            if estimate is not None and estimate > left:
                return Completion(
                    outcome=Outcome.SKIPPED_COST,
                    detail=f"about {estimate:.1f} s for {tokens} prompt tokens at "
                    f"{fresh_speed.tokens_per_s:.0f} tokens/s, {max(0.0, left):.1f} s left"
                    if fresh_speed
                    else "",
                    prompt_tokens=tokens,
                    estimate_ms=estimate_ms,
                )
            prompt_started = clock()  # after counting, which may load the model
            stream = provider.stream(
                messages,
                deadline=req.deadline,
                schema=req.json_schema,
                max_tokens=req.max_tokens,
                grammar=req.grammar,
                pin=req.pin_prefix,
            )
        except ImprintError as exc:
            return Completion(outcome=Outcome.ERROR, detail=str(exc), run_ms=_ms(started, clock))
        pieces: list[str] = []
        first: float | None = None
        outcome = Outcome.OK
        base: dict[str, Any] = {"prompt_tokens": tokens, "estimate_ms": estimate_ms}
        try:
            for piece in stream:
                if first is None:
                    first = _ms(started, clock)
                    now = clock()
                    if now > prompt_started and tokens >= MIN_SPEED_TOKENS:
                        measured = tokens / (now - prompt_started)
                        self.speeds[provider.name] = (
                            fresh_speed.update(measured, now)
                            if fresh_speed
                            else PromptSpeed(recent=(measured,), at=now)  # stale: restart
                        )
                pieces.append(piece)
                if clock() >= req.deadline:
                    outcome = Outcome.STOPPED
                    break
        except ImprintError as exc:
            return Completion(
                text="".join(pieces),
                outcome=Outcome.ERROR,
                detail=str(exc),
                pieces=len(pieces),
                first_piece_ms=first,
                run_ms=_ms(started, clock),
                **base,
            )
        except Exception as exc:  # a provider bug must not kill the one inference actor
            log.exception("inference.provider_failed")
            return Completion(
                text="".join(pieces),
                outcome=Outcome.ERROR,
                detail=f"provider failed ({type(exc).__name__})",
                pieces=len(pieces),
                first_piece_ms=first,
                run_ms=_ms(started, clock),
                **base,
            )
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()
        text = "".join(pieces)
        base.update(text=text, pieces=len(pieces), first_piece_ms=first, run_ms=_ms(started, clock))
        if outcome == Outcome.STOPPED:
            return Completion(outcome=Outcome.STOPPED, detail="stopped at the deadline", **base)
        if req.json_schema is None:
            return Completion(outcome=Outcome.OK, **base)
        try:
            data = json.loads(text)
            jsonschema.validate(data, req.json_schema)
        except (ValueError, jsonschema.ValidationError) as exc:
            reason = exc.message if isinstance(exc, jsonschema.ValidationError) else str(exc)
            return Completion(
                outcome=Outcome.INVALID, detail=f"output breaks the schema: {reason}", **base
            )
        return Completion(outcome=Outcome.OK, data=data, **base)

    def close(self) -> None:
        if self._provider is not None:
            self._provider.close()
            self._provider = None


# Bound once: tests replace this module's `time` with a fake monotonic clock.
_wall_clock = time.time


def _ms(since: float, clock: Callable[[], float] | None = None) -> float:
    now = clock() if clock is not None else time.monotonic()
    return round((now - since) * 1000, 3)


class InferenceActor(pykka.ThreadingActor):
    def __init__(self, logic: Inference) -> None:
        super().__init__()
        self.logic = logic
        self.actor_name = "InferenceActor"

    def on_stop(self) -> None:
        self.logic.close()

    # The logic skips a late request itself and says so in its Completion.
    @traced(skip_late=False)
    def complete(self, msg: CompleteRequest) -> Completion:
        result = self.logic.complete(msg)
        log.info(
            "inference.done",
            purpose=msg.purpose,
            outcome=result.outcome.value,
            pieces=result.pieces,
            first_piece_ms=result.first_piece_ms,
            run_ms=result.run_ms,
            prompt_tokens=result.prompt_tokens,
            estimate_ms=result.estimate_ms,
            late_by_ms=round(max(0.0, time.monotonic() - msg.deadline) * 1000, 1),
        )
        return result

    def state(self) -> dict[str, Any]:
        return self.logic.snapshot()


class InferenceProxy:
    complete = proxy_method(InferenceActor.complete)
    state = proxy_method(InferenceActor.state)


def ask_model(proxy: InferenceProxy, req: CompleteRequest, *, margin: float = 0.0) -> Completion:
    """Wait for a completion no longer than its deadline (plus `margin`).

    When the wait times out the request stays with the actor: it is skipped if it never
    started, or stopped at its first piece past the deadline; either way its result is
    dropped here.
    """
    left = max(0.0, req.deadline - time.monotonic()) + margin
    try:
        return proxy.complete(req).get(timeout=left)
    except pykka.Timeout:
        return Completion(outcome=Outcome.TIMEOUT, detail="no answer by the deadline")
    except pykka.ActorDeadError as exc:
        raise ProviderError("inference: the inference actor is not running") from exc
