"""The messages actors exchange: frozen pydantic models, one per request kind."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from imprint.actors._trace import Message
from imprint.store.sqlite import Filters, WriteBatch
from imprint.types import MemoryId, WorkspaceName

__all__ = [
    "Check",
    "FactQuery",
    "FetchRecords",
    "LexicalQuery",
    "Neighbors",
    "SourceState",
    "SqlRead",
    "VectorQuery",
    "Write",
]


class VectorQuery(Message):
    workspace: WorkspaceName
    text: str
    limit: int
    filters: Filters = Filters()


class LexicalQuery(Message):
    workspace: WorkspaceName
    text: str
    limit: int
    filters: Filters = Filters()
    phrase_only: bool = False


class FetchRecords(Message):
    workspace: WorkspaceName
    ids: tuple[MemoryId, ...]


class Neighbors(Message):
    workspace: WorkspaceName
    id: MemoryId
    k: int


SqlOp = Literal[
    "source_chunks",
    "source_entry",
    "source_root",
    "list_sources",
    "projects",
    "topics",
    "with_topic",
    "fact",
]


class SqlRead(Message):
    """One of the lexical reader's registry queries, by name, with keyword arguments."""

    workspace: WorkspaceName
    op: SqlOp
    args: dict[str, Any] = Field(default_factory=dict)


class FactQuery(Message):
    workspace: WorkspaceName
    subject: str = ""
    predicate: str = ""
    include_ended: bool = False
    limit: int = 20


class Write(Message):
    batch: WriteBatch


class Check(Message):
    """Compare the two indexes of the writer's workspace."""


class SourceState(Message):
    project: str
    source_type: str = "file"
