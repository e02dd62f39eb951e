"""The record every index holds (a memory, a file chunk, or a piece of ingested content), and
the other values the stores take and give: facts, filters, source entries and rows, and the
write batch."""

from __future__ import annotations

import hashlib
import re
import time
import unicodedata
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from imprint.errors import InputError
from imprint.store.context import embedded_context
from imprint.types import MemoryId

__all__ = [
    "RECORD_TYPES",
    "SESSION_SUMMARY_KIND",
    "SOURCE_TYPES",
    "Fact",
    "Filters",
    "Record",
    "SourceEntry",
    "SourceRow",
    "SourceType",
    "SupersedeLink",
    "WriteBatch",
    "check_project",
    "check_tag",
    "content_sha",
    "make_id",
    "project_from_folder",
    "text_key",
]

# Like workspace names (`^[a-z0-9][a-z0-9-]{0,39}$`), widened for what projects are called
# in practice: upper case, dots, underscores and one-level owner/name ("mopidy/mopidy",
# "modelcontextprotocol/python-sdk"). No spaces, no `|`, no control characters: a project is
# printed in evidence headers and must not be able to break them.
PROJECT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,99}$")
# Topics and domains: lower case words, inner spaces allowed ("error handling").
TAG_RE = re.compile(r"^[a-z0-9][a-z0-9 ._+#/-]{0,39}$")

SourceType = Literal["memory", "file", "url", "content"]
SOURCE_TYPES: tuple[str, ...] = ("memory", "file", "url", "content")
# The kind of the summary memory capture keeps per session (`imprint.capture`), which the
# session-start briefing reads back (`imprint.reads.briefing`).
SESSION_SUMMARY_KIND = "session-summary"
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


def check_project(project: str, argument: str = "project") -> str:
    """A project name to store under, or InputError; empty means none."""
    if not isinstance(project, str):
        raise InputError(f"{argument}: must be text")
    if project and not PROJECT_RE.match(project):
        raise InputError(
            f"{argument}: {project!r} is not allowed; 1-100 characters of letters, digits, "
            "'.', '_', '-' and '/', starting with a letter or digit"
        )
    return project


def project_from_folder(name: str) -> str:
    """A valid project name from a folder's name (other characters become '-')."""
    cleaned = re.sub(r"[^A-Za-z0-9._/-]+", "-", name).strip("-._/")[:100]
    return cleaned or "files"


def check_tag(tag: str, argument: str) -> str:
    """A topic or domain, or InputError."""
    if not TAG_RE.match(tag):
        raise InputError(
            f"{argument}: {tag!r} is not allowed; 1-40 characters of a-z, 0-9, space and "
            "'._+#/-', starting with a letter or digit"
        )
    return tag


def content_sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def text_key(text: str) -> str:
    """What two memories that say the same thing share: the sha256 of the text in Unicode
    NFKC, case-folded, every run of whitespace and punctuation one space, trimmed. So
    "Use ruff; black is gone." and "  use Ruff;  Black is gone " have one key."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    spaced = "".join(
        " " if c.isspace() or unicodedata.category(c).startswith("P") else c for c in folded
    )
    return content_sha(" ".join(spaced.split()))


def make_id(*parts: object) -> MemoryId:
    """A stable id: the same parts always give the same 16 hex digits."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).hexdigest()
    return MemoryId(digest[:16])


# The most of a head a block shows: the definition's name and the start of its parameters.
HEAD_SHOWN = 160


def shown_head(head: str) -> str:
    """A head cut to `HEAD_SHOWN` characters at a line's end (within one long line, at the
    limit, with `…`), its last line, the elision, kept."""
    if len(head) <= HEAD_SHOWN:
        return head
    signature, _, elision = head.rpartition("\n")
    cut = signature.rfind("\n", 0, HEAD_SHOWN)
    kept = signature[:cut] if cut > 0 else signature[: HEAD_SHOWN - 1] + "…"
    return f"{kept}\n{elision}"


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
    # Indexed with the content, never shown: the source path and heading trail or symbol
    # path (`imprint.store.context`).
    context: str = ""
    # A code chunk's symbols (`ActorRef.tell`; several packed ones comma-separated) and its
    # 1-based line range in its file; 0 where the chunker did not know them.
    symbol: str = ""
    line_start: int = 0
    line_end: int = 0
    # A later piece of a split definition: that definition's signature and an elision
    # line, shown above the content in search and recall, never indexed (`Chunk.head`).
    head: str = ""

    @property
    def indexed_text(self) -> str:
        """What is embedded: the context line (a code chunk's without its symbol words:
        `embedded_context`), then the content."""
        context = embedded_context(self.context, self.symbol)
        return f"{context}\n{self.content}" if context else self.content

    @property
    def shown_text(self) -> str:
        """What a search or recall block shows: the signature a later piece of a long
        definition opens with (`head`, at most `HEAD_SHOWN` characters of it, then its
        elision line), then the content. A compact block's excerpt can be as short as 300
        characters: a whole 374-character signature filled one and hid the matching body."""
        if not self.head:
            return self.content
        return f"{shown_head(self.head)}\n{self.content}"

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
            # The deep check compares it with SQLite's: a vector of another text is found.
            "content_sha": self.content_sha,
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


class Filters(BaseModel):
    model_config = ConfigDict(frozen=True)

    project: str = ""
    type: str = ""
    lang: str = ""
    layer: str = ""

    def pairs(self) -> list[tuple[str, str]]:
        return [(k, v) for k, v in self.model_dump().items() if v]


class SourceEntry(BaseModel):
    """The source registry's entry for one source: what it was when last ingested."""

    model_config = ConfigDict(frozen=True)

    project: str
    source: str
    source_type: str
    mtime: float
    sha: str
    chunk_count: int
    root: str = ""
    validators: str = ""


class SourceRow(BaseModel):
    """One line of a source listing: a source as its records have it now."""

    model_config = ConfigDict(frozen=True)

    project: str
    source: str
    source_type: str
    lang: str
    layer: str
    chunks: int
    mtime: float


class SupersedeLink(BaseModel):
    """Memory `old` was superseded by memory `new` at `at` (epoch seconds): search, recall,
    neighbors and graph_scope leave `old` out while `new` exists."""

    model_config = ConfigDict(frozen=True)

    old: MemoryId
    new: MemoryId
    at: float


class WriteBatch(BaseModel):
    """Everything one acknowledged write changes; journaled whole before it is applied.

    Records of a source in `drop_sources`, or of a source in `set_sources` with records among
    `upserts`, that are not among `upserts` are deleted: the writer adds their ids to
    `delete_ids` before journaling. A source in `set_sources` with no record among `upserts`
    keeps its records (only its registry entry changes). Deleting a record
    drops the supersede links it is part of (so deleting the newer memory brings the older
    one back); `supersede` adds links, in the same transaction as the upserts, and
    `restore` drops every link that hides the memories it names (they show again).
    """

    model_config = ConfigDict(frozen=True)

    upserts: tuple[Record, ...] = ()
    delete_ids: tuple[MemoryId, ...] = ()
    set_sources: tuple[SourceEntry, ...] = ()
    drop_sources: tuple[tuple[str, str], ...] = ()
    add_facts: tuple[Fact, ...] = ()
    end_facts: tuple[tuple[str, float], ...] = ()
    supersede: tuple[SupersedeLink, ...] = ()
    # Memories brought back: every link that marks one of them superseded is dropped (the
    # memory that replaced it stays, unlinked), after `supersede` adds its links.
    restore: tuple[MemoryId, ...] = ()
    # What this batch takes from another machine (key, the SHA-256 of its line): once taken,
    # the same line never replaces or deletes what is stored here again (`writes.sync`).
    sync_taken: tuple[tuple[str, str], ...] = ()
