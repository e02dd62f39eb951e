"""Domain ids, as NewTypes so a memory id is never passed where a workspace name belongs; and
the one `Outcome` every traced piece of work ends with."""

from enum import StrEnum
from typing import NewType

__all__ = ["MemoryId", "Outcome", "RecallId", "RequestId", "WorkspaceName"]

MemoryId = NewType("MemoryId", str)
WorkspaceName = NewType("WorkspaceName", str)
RequestId = NewType("RequestId", str)
RecallId = NewType("RecallId", str)


class Outcome(StrEnum):
    """How a piece of work ended, spelled one way in every log event and result: an actor
    message (`actor.message`), a model call (`Completion`, `inference.done`), a recall step,
    a recall's model phase (`recall.model.plan`, `recall.model.answer`), a recall.

    An actor message ends ok, error, timeout or skipped_late; the other values say more
    about a model call or a model phase, and its actor message logs the nearest of those four.
    """

    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"  # gave up (or the caller stopped waiting) at the deadline
    SKIPPED_LATE = "skipped_late"  # never started: its deadline passed first
    # A model call that never started: its estimated prompt time runs past the deadline.
    SKIPPED_COST = "skipped_cost"
    STOPPED = "stopped"  # a model call stopped at the deadline, mid-stream
    INVALID = "invalid"  # a model call whose output breaks the schema
    # A model phase whose plan or answer the recall could not use: it went on without it.
    FALLBACK = "fallback"
