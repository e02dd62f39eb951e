"""Every actor message is traced: request id, actor, message kind, queue wait, run time, outcome.

Messages carry their own `sent_at` (monotonic) and ids, because actor threads do not inherit
the caller's structlog context.
"""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

import structlog
from pydantic import BaseModel, ConfigDict, Field

from imprint.logs import get_logger

__all__ = ["Message", "new_request_id", "traced"]

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")
M = TypeVar("M", bound="Message")

log = get_logger("imprint.actors")


def new_request_id() -> str:
    return uuid.uuid4().hex[:12]


def _bound(key: str, default: Any) -> Callable[[], Any]:
    # A message sent while handling another inherits its ids, so a recall's step shows up
    # on the reader messages it causes too.
    return lambda: structlog.contextvars.get_contextvars().get(key, default)


def _request_id() -> str:
    return str(structlog.contextvars.get_contextvars().get("request_id") or new_request_id())


class Message(BaseModel):
    """Base of every actor message: who asked, and when it entered the mailbox."""

    model_config = ConfigDict(frozen=True)

    request_id: str = Field(default_factory=_request_id)
    recall_id: str = Field(default_factory=_bound("recall_id", ""))
    step: int = Field(default_factory=_bound("step", -1))
    sent_at: float = Field(default_factory=time.monotonic)


def traced(
    kind: str,
) -> Callable[[Callable[Concatenate[S, M, P], R]], Callable[Concatenate[S, M, P], R]]:
    """Log one `actor.message` event per handled message, whatever its outcome."""

    def wrap(fn: Callable[Concatenate[S, M, P], R]) -> Callable[Concatenate[S, M, P], R]:
        @functools.wraps(fn)
        def handler(self: S, msg: M, *args: P.args, **kwargs: P.kwargs) -> R:
            started = time.monotonic()
            outcome = "ok"
            fields: dict[str, Any] = {"request_id": msg.request_id}
            if msg.recall_id:
                fields.update(recall_id=msg.recall_id, step=msg.step)
            with structlog.contextvars.bound_contextvars(**fields):
                try:
                    return fn(self, msg, *args, **kwargs)
                except BaseException:
                    outcome = "error"
                    raise
                finally:
                    log.info(
                        "actor.message",
                        actor=getattr(self, "actor_name", type(self).__name__),
                        message=kind,
                        queue_ms=round((started - msg.sent_at) * 1000, 3),
                        run_ms=round((time.monotonic() - started) * 1000, 3),
                        outcome=outcome,
                    )

        return handler

    return wrap
