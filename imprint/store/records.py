"""The record every index holds: a memory, a file chunk, or a piece of ingested content."""

from __future__ import annotations

import hashlib
import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from imprint.types import MemoryId

__all__ = [
    "RECORD_TYPES",
    "SOURCE_TYPES",
    "Fact",
    "Record",
    "SourceType",
    "content_sha",
    "make_id",
]

SourceType = Literal["memory", "file", "url", "content"]
SOURCE_TYPES: tuple[str, ...] = ("memory", "file", "url", "content")
RECORD_TYPES: tuple[str, ...] = (
    "decision",
    "pattern",
    "finding",
    "bug",
    "preference",
    "architecture",
    "milestone",
    "note",
)


def content_sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def make_id(*parts: object) -> MemoryId:
    """A stable id: the same parts always give the same 16 hex digits."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).hexdigest()
    return MemoryId(digest[:16])


class Record(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: MemoryId
    content: str
    project: str = ""
    source: str = ""
    source_type: SourceType = "file"
    chunk_index: int = 0
    chunk_count: int = 1
    type: str = "note"
    lang: str = ""
    layer: str = ""
    kind: str = ""
    domains: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()
    created_at: float = Field(default_factory=time.time)
    source_mtime: float = 0.0
    content_sha: str = ""
    tagged_by: str = "rules"

    def chroma_metadata(self) -> dict[str, Any]:
        """Flat scalar metadata for Chroma's `where` filters."""
        return {
            "project": self.project,
            "source": self.source,
            "source_type": self.source_type,
            "chunk_index": self.chunk_index,
            "type": self.type,
            "lang": self.lang,
            "layer": self.layer,
        }


class Fact(BaseModel):
    """A temporal subject-predicate-object triple; `ended` is None while it holds."""

    model_config = ConfigDict(frozen=True)

    id: str
    subject: str
    predicate: str
    object: str
    valid_from: float
    ended: float | None = None
    source: str = ""
