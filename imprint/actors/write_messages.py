"""The writer actor's messages: writes, the index check, and what a source looks like now."""

from __future__ import annotations

from imprint.actors._trace import Message
from imprint.store.sqlite import WriteBatch

__all__ = ["Check", "SourceState", "Write"]


class Write(Message):
    kind = "write"
    batch: WriteBatch


class Check(Message):
    """Compare the two indexes of the writer's workspace."""

    kind = "check"


class SourceState(Message):
    kind = "source_state"
    project: str
    source_type: str = "file"
