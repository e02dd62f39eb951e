"""What a project remembers, for the people who read it (the dashboard's Memory, timeline
and session pages): its memories by type, newest first, paged, with the supersede links
among them; the facts about it with their validity; its captured sessions.

Types are grouped as they are stored: a type this module does not name (one a later
extractor adds) gets a section of its own under its own name.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from imprint.actors.read_messages import (
    FactQuery,
    ProjectMemories,
    Projects,
    SourceChunks,
    SupersedeLinks,
)
from imprint.errors import InputError
from imprint.reads.deadline import Deadline
from imprint.reads.gateway import Reads
from imprint.store.records import (
    SESSION_SUMMARY_KIND,
    Fact,
    Record,
    SupersedeLink,
    check_project,
)
from imprint.types import MemoryId, WorkspaceName

__all__ = [
    "FACTS_SHOWN",
    "PAGE_SIZE",
    "SESSION_PREFIX",
    "TURNS_SHOWN",
    "MemoryItem",
    "ProjectMemory",
    "Section",
    "SessionRow",
    "memory_projects",
    "project_memory",
    "session_observations",
    "session_of",
    "session_row",
]

# Memories on one page (and one timeline): a few hundred stay readable at a glance.
PAGE_SIZE = 200
FACTS_SHOWN = 100
TURNS_SHOWN = 200
SESSION_PREFIX = "session:"
# Section headings of the types known today, in the order a reader wants them; any other
# type follows under its own name.
TYPE_HEADINGS: tuple[tuple[str, str], ...] = (
    ("decision", "Decisions"),
    ("bug", "Bugs and their fixes"),
    ("fix", "Fixes"),
    ("preference", "Preferences"),
    ("problem", "Open problems"),
    ("open_problem", "Open problems"),
    ("finding", "Findings"),
    ("pattern", "Patterns"),
    ("architecture", "Architecture"),
    ("milestone", "Milestones"),
    ("note", "Notes"),
)
SESSIONS_HEADING = "Session summaries"


class MemoryItem(BaseModel):
    """One memory with the links that make it superseded or that it supersedes."""

    model_config = ConfigDict(frozen=True)

    record: Record
    session: str = ""  # the captured session it came from ("" when none)
    superseded_by: tuple[SupersedeLink, ...] = ()
    supersedes: tuple[SupersedeLink, ...] = ()

    @property
    def superseded(self) -> bool:
        return bool(self.superseded_by)


class Section(BaseModel):
    model_config = ConfigDict(frozen=True)

    key: str  # the type, or the session summaries' kind
    heading: str
    items: tuple[MemoryItem, ...]


class ProjectMemory(BaseModel):
    """One page of a project's memories, grouped, with what the page needs around them."""

    model_config = ConfigDict(frozen=True)

    project: str
    offset: int
    limit: int
    total: int
    items: tuple[MemoryItem, ...]  # this page, newest first
    sections: tuple[Section, ...]
    facts: tuple[Fact, ...]
    links: tuple[SupersedeLink, ...]  # every link touching this page's memories

    @property
    def more(self) -> bool:
        return self.offset + len(self.items) < self.total


class SessionRow(BaseModel):
    """One captured session: its turns as stored (redacted before they were written), its
    summary, and the memories that name it as their source."""

    model_config = ConfigDict(frozen=True)

    session_id: str
    project: str
    turns: tuple[Record, ...]
    turn_count: int
    summary: Record | None
    extracted: tuple[Record, ...]


def session_of(source: str) -> str:
    """The session id of a `session:<id>` or `session:<id>#n` source; "" for any other."""
    if not source.startswith(SESSION_PREFIX):
        return ""
    return source[len(SESSION_PREFIX) :].split("#", 1)[0]


def _heading(key: str) -> str:
    for name, heading in TYPE_HEADINGS:
        if name == key:
            return heading
    return key.replace("_", " ").replace("-", " ").capitalize() or "Untyped"


def _sections(items: list[MemoryItem]) -> tuple[Section, ...]:
    grouped: dict[str, list[MemoryItem]] = {}
    for it in items:
        key = SESSIONS_HEADING if it.record.kind == SESSION_SUMMARY_KIND else it.record.type
        grouped.setdefault(key, []).append(it)
    order = [name for name, _ in TYPE_HEADINGS]
    keys = sorted(
        grouped,
        key=lambda k: (
            k == SESSIONS_HEADING,
            order.index(k) if k in order else len(order),
            k,
        ),
    )
    return tuple(
        Section(
            key=k,
            heading=SESSIONS_HEADING if k == SESSIONS_HEADING else _heading(k),
            items=tuple(grouped[k]),
        )
        for k in keys
    )


def memory_projects(reads: Reads, ws: WorkspaceName) -> list[tuple[str, int]]:
    """Every project of the workspace with its record count (the Memory page's index)."""
    with reads.deadline() as deadline:
        return deadline.wait(reads.ask(Projects(workspace=ws)), "memory")


def project_memory(
    reads: Reads, ws: WorkspaceName, project: str, offset: int = 0, limit: int = PAGE_SIZE
) -> ProjectMemory:
    """One page of `project`'s memories (superseded ones included and marked), newest
    first, grouped by type, and the facts about it (subject = the project) with their
    validity, ended ones included."""
    check_project(project)
    if offset < 0:
        raise InputError(f"offset: {offset} is not allowed; 0 or more")
    if not 1 <= limit <= PAGE_SIZE:
        raise InputError(f"limit: {limit} is not allowed; 1-{PAGE_SIZE}")
    with reads.deadline() as deadline:
        facts = reads.ask(
            FactQuery(workspace=ws, subject=project, include_ended=True, limit=FACTS_SHOWN)
        )
        asked = ProjectMemories(workspace=ws, project=project, offset=offset, limit=limit)
        records, total = deadline.wait(reads.ask(asked), "memory")
        ids = tuple(r.id for r in records)
        links = deadline.wait(reads.ask(SupersedeLinks(workspace=ws, ids=ids)), "memory")
        found_facts = deadline.wait(facts, "memory")
    by_old: dict[MemoryId, list[SupersedeLink]] = {}
    by_new: dict[MemoryId, list[SupersedeLink]] = {}
    for link in links if ids else []:
        by_old.setdefault(link.old, []).append(link)
        by_new.setdefault(link.new, []).append(link)
    items = [
        MemoryItem(
            record=r,
            session=session_of(r.source),
            superseded_by=tuple(by_old.get(r.id, ())),
            supersedes=tuple(by_new.get(r.id, ())),
        )
        for r in records
    ]
    return ProjectMemory(
        project=project,
        offset=offset,
        limit=limit,
        total=total,
        items=tuple(items),
        sections=_sections(items),
        facts=tuple(found_facts),
        links=tuple(links) if ids else (),
    )


def session_row(reads: Reads, ws: WorkspaceName, session_id: str, project: str) -> SessionRow:
    """One captured session of `project`: its first TURNS_SHOWN stored turns, its summary,
    and the project's memories whose source is this session (`session:<id>` or one of its
    turns, `session:<id>#n`), the newest PAGE_SIZE of them."""
    check_project(project)
    sid = session_id.strip()
    if not sid or len(sid) > 128 or not all(c.isalnum() or c in "-_." for c in sid):
        raise InputError(f"session: {session_id!r} is not a session id; open one from Memory")
    source = f"{SESSION_PREFIX}{sid}"
    with reads.deadline() as deadline:
        turns, total = deadline.wait(
            reads.ask(
                SourceChunks(
                    workspace=ws, source=source, project=project, start=0, end=TURNS_SHOWN - 1
                )
            ),
            "session",
        )
        # The summary and the memories of the session or of one of its turns
        # (`session:<id>#n`); the turns share the session's source with them.
        asked = ProjectMemories(workspace=ws, project=project, limit=PAGE_SIZE, source=source)
        mine, _ = deadline.wait(reads.ask(asked), "session")
    summary = next((r for r in mine if r.kind == SESSION_SUMMARY_KIND), None)
    if not turns and summary is None:
        raise InputError(f"session: no captured session {sid!r} in project {project!r}")
    return SessionRow(
        session_id=sid,
        project=project,
        turns=tuple(t for t in turns if t.source_type != "memory"),
        turn_count=total - sum(1 for r in mine if r.source == source),
        summary=summary,
        extracted=tuple(r for r in mine if r.kind != SESSION_SUMMARY_KIND),
    )


# The kinds capture gives the memories it keeps from a turn (`imprint.capture.observe`).
_OBSERVED = ("observation", "open-problem")


def session_observations(
    reads: Reads, ws: WorkspaceName, project: str, source: str, deadline: Deadline
) -> list[Record]:
    """The observations capture kept from session `source` (`session:<id>`): each is sourced
    `session:<id>#<chunk>`, so deleting the session takes them with it (`delete_records`),
    and its confirmation page names them (the dashboard). Found by their source, every
    page of them: a project's newest few thousand would miss an older session's."""
    if not source.startswith(SESSION_PREFIX) or "#" in source:
        return []
    found: list[Record] = []
    offset, total = 0, 1
    while offset < total:
        asked = ProjectMemories(
            workspace=ws, project=project, offset=offset, limit=PAGE_SIZE, source=source
        )
        page, total = deadline.wait(reads.ask(asked), "delete")
        if not page:
            break
        offset += len(page)
        found += [r for r in page if r.kind in _OBSERVED and r.source.startswith(f"{source}#")]
    return found
