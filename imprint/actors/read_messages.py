"""The reader actors' messages: one frozen model per query, each naming its reader family.

A message is the whole request: its arguments, its ids and the deadline of the call that
caused it (see `_trace.Message`). Readers dispatch on the message's type, never on a name.
"""

from __future__ import annotations

from enum import Enum
from typing import ClassVar

from imprint.actors._trace import Message
from imprint.store.sqlite import Filters
from imprint.types import MemoryId, WorkspaceName

__all__ = [
    "FactById",
    "FactQuery",
    "Family",
    "FetchRecords",
    "LexicalAndPhrase",
    "LexicalQuery",
    "ListSources",
    "Neighbors",
    "ProjectSources",
    "Projects",
    "ReadMessage",
    "SourceChunks",
    "SourceEntryQuery",
    "SourceRoot",
    "Topics",
    "VectorBatch",
    "VectorQuery",
    "WithTopic",
]


class Family(Enum):
    """Which reader pool serves a message."""

    VECTOR = "vector"
    LEXICAL = "lexical"
    FACT = "fact"


class ReadMessage(Message):
    family: ClassVar[Family]
    workspace: WorkspaceName


class VectorQuery(ReadMessage):
    kind = "vector_query"
    family = Family.VECTOR
    text: str
    limit: int
    filters: Filters = Filters()


class VectorBatch(ReadMessage):
    """Several vector queries of one workspace answered together (a recall's search steps):
    their texts embedded in one inference, the store asked once per (limit, filters)."""

    kind = "vector_batch"
    family = Family.VECTOR
    queries: tuple[VectorQuery, ...]


class Neighbors(ReadMessage):
    """The k records nearest to one record, itself excluded."""

    kind = "neighbors"
    family = Family.VECTOR
    id: MemoryId
    k: int


class LexicalQuery(ReadMessage):
    kind = "lexical_query"
    family = Family.LEXICAL
    text: str
    limit: int
    filters: Filters = Filters()


class LexicalAndPhrase(ReadMessage):
    """A hybrid search's two BM25 lists from one pass: the ranking `LexicalQuery` gives, and
    its exact-phrase matches, which lead that ranking."""

    kind = "lexical_phrase"
    family = Family.LEXICAL
    text: str
    limit: int
    filters: Filters = Filters()


class FetchRecords(ReadMessage):
    kind = "fetch_records"
    family = Family.LEXICAL
    ids: tuple[MemoryId, ...]


class SourceChunks(ReadMessage):
    """Chunks start..end (inclusive) of one source, and how many it has in all."""

    kind = "source_chunks"
    family = Family.LEXICAL
    source: str
    project: str = ""
    start: int = 0
    end: int | None = None  # None: to the last chunk


class SourceRoot(ReadMessage):
    kind = "source_root"
    family = Family.LEXICAL
    project: str
    source: str


class SourceEntryQuery(ReadMessage):
    """The source registry's entry (type, mtime, sha, validators) for one source."""

    kind = "source_entry"
    family = Family.LEXICAL
    project: str
    source: str


class ListSources(ReadMessage):
    kind = "list_sources"
    family = Family.LEXICAL
    project: str = ""
    lang: str = ""
    layer: str = ""
    limit: int = 50


class Projects(ReadMessage):
    kind = "projects"
    family = Family.LEXICAL


class ProjectSources(ReadMessage):
    """The first `limit` sources of each of `projects`, in one read."""

    kind = "project_sources"
    family = Family.LEXICAL
    projects: tuple[str, ...]
    limit: int = 10


class Topics(ReadMessage):
    kind = "topics"
    family = Family.LEXICAL
    project: str = ""
    limit: int = 10


class WithTopic(ReadMessage):
    kind = "with_topic"
    family = Family.LEXICAL
    topic: str
    limit: int


class FactQuery(ReadMessage):
    kind = "fact_query"
    family = Family.FACT
    subject: str = ""
    predicate: str = ""
    include_ended: bool = False
    limit: int = 20


class FactById(ReadMessage):
    kind = "fact"
    family = Family.FACT
    fact_id: str
