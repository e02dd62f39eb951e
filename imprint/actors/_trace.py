"""Every actor message is traced: request id, actor, message kind, queue wait, run time, outcome.

Messages carry their own `sent_at` (monotonic), ids and deadline, because actor threads do not
inherit the caller's context. The deadline is the one of the call that caused the message (a
tool call, a recall step), bound with `bind_deadline`; an actor that takes a message whose
deadline has passed does not run it (`outcome="skipped_late"`).

Outcomes (`imprint.types.Outcome`): ok, error, timeout (the handler gave up at its
deadline), skipped_late.
"""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, ClassVar, Concatenate, ParamSpec, TypeVar

import structlog
from pydantic import BaseModel, ConfigDict, Field

from imprint.errors import DeadlineExceeded, SkippedLate
from imprint.logs import get_logger
from imprint.types import Outcome, RecallId, RequestId

__all__ = [
    "Message",
    "bind_deadline",
    "bound_deadline",
    "log_handled",
    "new_request_id",
    "traced",
]

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")
M = TypeVar("M", bound="Message")

log = get_logger("imprint.actors")

# A monotonic instant: the deadline of the call in progress in this context.
_DEADLINE: ContextVar[float | None] = ContextVar("imprint_deadline", default=None)


def new_request_id() -> RequestId:
    return RequestId(uuid.uuid4().hex[:12])


def bound_deadline() -> float | None:
    return _DEADLINE.get()


@contextmanager
def bind_deadline(at: float | None) -> Iterator[None]:
    """Messages sent in this context carry `at` as their deadline (None: no deadline)."""
    token = _DEADLINE.set(at)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def _bound(key: str, default: Any) -> Callable[[], Any]:
    # A message sent while handling another inherits its ids, so a recall's step shows up
    # on the reader messages it causes too.
    return lambda: structlog.contextvars.get_contextvars().get(key, default)


def _request_id() -> RequestId:
    bound = structlog.contextvars.get_contextvars().get("request_id")
    return RequestId(str(bound)) if bound else new_request_id()


class Message(BaseModel):
    """Base of every actor message: who asked, when it entered the mailbox, and by when the
    answer is of use to anyone."""

    model_config = ConfigDict(frozen=True)

    kind: ClassVar[str] = "message"
    request_id: RequestId = Field(default_factory=_request_id)
    recall_id: RecallId = Field(default_factory=_bound("recall_id", ""))
    step: int = Field(default_factory=_bound("step", -1))
    sent_at: float = Field(default_factory=time.monotonic)
    deadline: float | None = Field(default_factory=bound_deadline)


# A reported outcome as the nearest of an actor message's four (a completion skipped for
# its cost was handled: ok).
_AS_MESSAGE: dict[str, Outcome] = {
    Outcome.SKIPPED_LATE: Outcome.SKIPPED_LATE,
    Outcome.TIMEOUT: Outcome.TIMEOUT,
    Outcome.STOPPED: Outcome.TIMEOUT,
    Outcome.ERROR: Outcome.ERROR,
    Outcome.INVALID: Outcome.ERROR,
}


def _outcome_of(result: Any) -> Outcome:
    """A handler that reports its own outcome (a step result, a completion) is logged so."""
    reported = getattr(result, "outcome", Outcome.OK)
    return _AS_MESSAGE.get(reported, Outcome.OK) if isinstance(reported, str) else Outcome.OK


def log_handled(actor: str, kind: str, sent_at: float, started: float, outcome: Outcome) -> None:
    """The `actor.message` event of one handled message (or a part of one that stands for a
    message of its own: a recall's search steps answered together)."""
    log.info(
        "actor.message",
        actor=actor,
        message=kind,
        queue_ms=round((started - sent_at) * 1000, 3),
        run_ms=round((time.monotonic() - started) * 1000, 3),
        outcome=outcome.value,
    )


def traced(
    kind: str | None = None,
    *,
    skip_late: bool = True,
) -> Callable[[Callable[Concatenate[S, M, P], R]], Callable[Concatenate[S, M, P], R]]:
    """Log one `actor.message` event per handled message, whatever its outcome.

    With `skip_late`, a message whose deadline passed while it waited is not run: it raises
    `SkippedLate`. The handler runs with the message's ids and deadline bound, so the
    messages it sends in turn carry them. `kind` defaults to the message class's own.
    """

    def wrap(fn: Callable[Concatenate[S, M, P], R]) -> Callable[Concatenate[S, M, P], R]:
        @functools.wraps(fn)
        def handler(self: S, msg: M, *args: P.args, **kwargs: P.kwargs) -> R:
            started = time.monotonic()
            outcome = Outcome.OK
            fields: dict[str, Any] = {"request_id": msg.request_id}
            if msg.recall_id:
                fields.update(recall_id=msg.recall_id, step=msg.step)
            with structlog.contextvars.bound_contextvars(**fields), bind_deadline(msg.deadline):
                try:
                    if skip_late and msg.deadline is not None and started > msg.deadline:
                        late_ms = (started - msg.deadline) * 1000
                        raise SkippedLate(
                            f"{kind or msg.kind}: skipped, its deadline passed {late_ms:.0f} ms "
                            "before it could start"
                        )
                    result = fn(self, msg, *args, **kwargs)
                    outcome = _outcome_of(result)
                    return result
                except SkippedLate:
                    outcome = Outcome.SKIPPED_LATE
                    raise
                except DeadlineExceeded:
                    outcome = Outcome.TIMEOUT
                    raise
                except BaseException:
                    outcome = Outcome.ERROR
                    raise
                finally:
                    log_handled(
                        getattr(self, "actor_name", type(self).__name__),
                        kind or msg.kind,
                        msg.sent_at,
                        started,
                        outcome,
                    )

        return handler

    return wrap
