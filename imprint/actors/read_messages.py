"""The reader actors' messages: one frozen model per query, each naming its reader family and
the type of its answer (`VectorQuery` is a `ReadMessage[Hits]`).

A message is the whole request: its arguments, its ids and the deadline of the call that
caused it (see `_trace.Message`). Readers dispatch on the message's type, never on a name,
and hand their answer back through `answer`, so the type checker holds each handler to the
type its message names; the gateway's `ask(msg: ReadMessage[R]) -> Pending[R]` gives it
back typed, with no cast.
"""

from __future__ import annotations

from enum import Enum
from typing import ClassVar, Generic, TypeVar

from imprint.actors._trace import Message
from imprint.store.records import Fact, Filters, Record, SourceEntry, SourceRow, SupersedeLink
from imprint.types import MemoryId, WorkspaceName

__all__ = [
    "FactById",
    "FactQuery",
    "Family",
    "FetchRecords",
    "Hits",
    "LexicalAndPhrase",
    "LexicalQuery",
    "ListSources",
    "Neighbors",
    "Newest",
    "ProjectMemories",
    "ProjectRoots",
    "ProjectSources",
    "Projects",
    "ReadMessage",
    "SameText",
    "SourceChunks",
    "SourceEntryQuery",
    "SourceRoot",
    "SupersedeLinks",
    "Topics",
    "VectorBatch",
    "VectorQuery",
    "WithTopic",
    "answer",
]

R = TypeVar("R")

# Record ids, best first, with their scores.
Hits = list[tuple[MemoryId, float]]


class Family(Enum):
    """Which reader pool serves a message."""

    VECTOR = "vector"
    LEXICAL = "lexical"
    FACT = "fact"


class ReadMessage(Message, Generic[R]):
    """A query to the readers of `family`, about one workspace; `R` is its answer's type."""

    family: ClassVar[Family]
    workspace: WorkspaceName


def answer(msg: ReadMessage[R], value: R) -> R:
    """`value`, as the answer to `msg`: a handler returns through this, so the type checker
    holds what it answers to the type its message names."""
    return value


class VectorQuery(ReadMessage[Hits]):
    kind = "vector_query"
    family = Family.VECTOR
    text: str
    limit: int
    filters: Filters = Filters()


class VectorBatch(ReadMessage[list[Hits]]):
    """Several vector queries of one workspace answered together (a recall's search steps):
    their texts embedded in one inference, the store asked once per (limit, filters)."""

    kind = "vector_batch"
    family = Family.VECTOR
    queries: tuple[VectorQuery, ...]


class Neighbors(ReadMessage[Hits]):
    """The k records nearest to one record, itself excluded."""

    kind = "neighbors"
    family = Family.VECTOR
    id: MemoryId
    k: int


class LexicalQuery(ReadMessage[Hits]):
    kind = "lexical_query"
    family = Family.LEXICAL
    text: str
    limit: int
    filters: Filters = Filters()


class LexicalAndPhrase(ReadMessage[tuple[Hits, Hits]]):
    """A hybrid search's two BM25 lists from one pass: the ranking `LexicalQuery` gives, and
    its exact-phrase matches, which lead that ranking."""

    kind = "lexical_and_phrase"
    family = Family.LEXICAL
    text: str
    limit: int
    filters: Filters = Filters()


class FetchRecords(ReadMessage[dict[MemoryId, Record]]):
    kind = "fetch_records"
    family = Family.LEXICAL
    ids: tuple[MemoryId, ...]


class SupersedeLinks(ReadMessage[list[SupersedeLink]]):
    """The supersede links these records are part of, as the older or the newer memory."""

    kind = "supersede_links"
    family = Family.LEXICAL
    ids: tuple[MemoryId, ...]


class SameText(ReadMessage[MemoryId | None]):
    """The memory of one project whose text has this key (`records.text_key`), if any."""

    kind = "same_text"
    family = Family.LEXICAL
    project: str
    key: str


class SourceChunks(ReadMessage[tuple[list[Record], int]]):
    """Chunks start..end (inclusive) of one source, and how many it has in all."""

    kind = "source_chunks"
    family = Family.LEXICAL
    source: str
    project: str = ""
    start: int = 0
    end: int | None = None  # None: to the last chunk


class SourceRoot(ReadMessage[str]):
    kind = "source_root"
    family = Family.LEXICAL
    project: str
    source: str


class SourceEntryQuery(ReadMessage[SourceEntry | None]):
    """The source registry's entry (type, mtime, sha, validators) for one source."""

    kind = "source_entry"
    family = Family.LEXICAL
    project: str
    source: str


class ListSources(ReadMessage[tuple[list[SourceRow], int]]):
    kind = "list_sources"
    family = Family.LEXICAL
    project: str = ""
    lang: str = ""
    layer: str = ""
    limit: int = 50


class Projects(ReadMessage[list[tuple[str, int]]]):
    kind = "projects"
    family = Family.LEXICAL


class ProjectSources(ReadMessage[dict[str, list[tuple[str, int]]]]):
    """The first `limit` sources of each of `projects`, in one read."""

    kind = "project_sources"
    family = Family.LEXICAL
    projects: tuple[str, ...]
    limit: int = 10


class Newest(ReadMessage[list[Record]]):
    """The newest records of one project of these types (or kinds), newest first."""

    kind = "newest"
    family = Family.LEXICAL
    project: str
    types: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    limit: int = 10


class ProjectMemories(ReadMessage[tuple[list[Record], int]]):
    """One page of a project's memories, superseded ones included, newest first, and how
    many it has in all; with `source`, only those of that source or its parts (`source#n`)."""

    kind = "project_memories"
    family = Family.LEXICAL
    project: str
    offset: int = 0
    limit: int = 200
    source: str = ""


class ProjectRoots(ReadMessage[list[tuple[str, str]]]):
    """Each (project, folder) an ingested folder registered."""

    kind = "project_roots"
    family = Family.LEXICAL


class Topics(ReadMessage[list[tuple[str, int]]]):
    kind = "topics"
    family = Family.LEXICAL
    project: str = ""
    limit: int = 10


class WithTopic(ReadMessage[list[Record]]):
    kind = "with_topic"
    family = Family.LEXICAL
    topic: str
    limit: int


class FactQuery(ReadMessage[list[Fact]]):
    kind = "fact_query"
    family = Family.FACT
    subject: str = ""
    predicate: str = ""
    include_ended: bool = False
    limit: int = 20


class FactById(ReadMessage[Fact | None]):
    kind = "fact"
    family = Family.FACT
    fact_id: str
