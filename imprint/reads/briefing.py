"""What a hook adds to a session: the session-start briefing and the memories relevant to
a prompt, for the project the session's folder maps to.

The daemon computes both (`imprint.daemon.hosting.answer_hook`), and the MCP server offers
the briefing as a resource per project and as a prompt. Everything is read through
`Reads`, so the briefing sees exactly what search sees.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from imprint.actors.read_messages import (
    FactQuery,
    FetchRecords,
    Newest,
    ProjectRoots,
    Projects,
    SupersedeLinks,
    VectorQuery,
)
from imprint.hooklib.compose import (
    FACTS_HEADING,
    FACTS_SHOWN,
    FENCE,
    FRAME,
    MEMORY_SECTIONS,
    SESSIONS_HEADING,
    SESSIONS_SHOWN,
    SUPERSEDED_SLACK,
    compose_briefing,
    item,
    pick_project,
    record_entry,
    session_roots,
)
from imprint.hooklib.settings import excluded_folder
from imprint.reads.deadline import Deadline, call_deadline
from imprint.reads.gateway import ActorReads, Reads
from imprint.store.records import (
    SESSION_SUMMARY_KIND,
    Fact,
    Filters,
    Record,
    project_from_folder,
)
from imprint.types import MemoryId, WorkspaceName

if TYPE_CHECKING:
    from imprint.actors.lifecycle import Runtime

__all__ = [
    "PROMPT_MAX_CHARS",
    "PROMPT_MIN_SCORE",
    "SUMMARY_KIND",
    "BriefingPreview",
    "HookRequest",
    "LeftOut",
    "briefing_preview",
    "briefing_text",
    "excluded",
    "hook_context",
    "project_for",
    "prompt_context",
]

# The kind of the session summary memories that capture keeps (one per session).
SUMMARY_KIND = SESSION_SUMMARY_KIND
PROMPT_MAX_CHARS = 600
PROMPT_MAX_MEMORIES = 3
# Cosine similarity a memory must reach to count as clearly relevant to a prompt.
PROMPT_MIN_SCORE = 0.45


class HookRequest(BaseModel):
    """One hook's question to the daemon (`imprint hook` sends it as the hello)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    event: Literal["session-start", "prompt-submit"]
    cwd: str
    prompt: str = ""
    context_chars: int = Field(default=2000, ge=200, le=20_000)
    exclude: tuple[str, ...] = ()
    deadline_ms: int = Field(default=1500, ge=1, le=60_000)
    # How long to wait for a daemon's store that is still starting (None: the deadline); a
    # session start asks for little, and briefs from the store itself when told so.
    runtime_wait_ms: int | None = Field(default=None, ge=0, le=60_000)
    workspace: str = ""


def excluded(cwd: Path, project: str, exclude: Sequence[str]) -> bool:
    """Whether `hooks.exclude` names this project or a folder the session is in."""
    return project in exclude or excluded_folder(cwd, exclude)


def project_for(
    reads: Reads, ws: WorkspaceName, cwd: Path, deadline: Deadline, data_dir: Path | None = None
) -> str:
    """The project a session in `cwd` works on: the one whose ingested folder holds `cwd`
    (the deepest), else the one capture recorded for its resolved root (`data_dir`'s
    record), else the known project named after that root, when no other folder holds
    that name (`pick_project`); "" when none."""
    here = cwd.resolve()
    roots = deadline.wait(reads.ask(ProjectRoots(workspace=ws)), "briefing")
    recorded = session_roots(data_dir) if data_dir is not None else {}
    project, new = pick_project(here, roots, recorded, project_from_folder)
    if not new:
        return project
    known = {name for name, _ in deadline.wait(reads.ask(Projects(workspace=ws)), "briefing")}
    return project if project in known else ""


class _Read(NamedTuple):
    """What a briefing is made of, read once: each section's newest records (past its count
    by SUPERSEDED_SLACK), the superseded among them, the facts, the last sessions."""

    newest: list[tuple[str, list[Record]]]
    superseded: set[MemoryId]
    facts: list[Fact]
    sessions: list[Record]

    def text(self, project: str, max_chars: int) -> str:
        return compose_briefing(
            project, self.newest, self.superseded, self.facts, self.sessions, max_chars
        )


def _read(reads: Reads, ws: WorkspaceName, project: str, deadline: Deadline) -> _Read:
    asks = [
        (
            heading,
            reads.ask(
                Newest(workspace=ws, project=project, types=t, kinds=k, limit=n + SUPERSEDED_SLACK)
            ),
        )
        for heading, t, k, n in MEMORY_SECTIONS
    ]
    sessions = reads.ask(
        Newest(workspace=ws, project=project, kinds=(SUMMARY_KIND,), limit=SESSIONS_SHOWN)
    )
    facts = reads.ask(FactQuery(workspace=ws, subject=project, limit=FACTS_SHOWN))
    newest = [(heading, deadline.wait(pending, "briefing")) for heading, pending in asks]
    # A memory superseded by a newer one no longer holds: left out, as search leaves it out.
    ids = tuple(r.id for _, records in newest for r in records)
    links = deadline.wait(reads.ask(SupersedeLinks(workspace=ws, ids=ids)), "briefing")
    superseded = {link.old for link in links} if ids else set()
    return _Read(
        newest, superseded, deadline.wait(facts, "briefing"), deadline.wait(sessions, "briefing")
    )


def briefing_text(
    reads: Reads, ws: WorkspaceName, project: str, max_chars: int, deadline: Deadline
) -> str:
    """The session-start briefing for `project`: its newest decisions, bugs with their
    fixes, preferences, the facts about it that hold now and its last sessions, then how to
    search for more; at most `max_chars`. Empty when the project has none of these."""
    return _read(reads, ws, project, deadline).text(project, max_chars)


class LeftOut(BaseModel):
    """An item a briefing read but did not give, and why."""

    model_config = ConfigDict(frozen=True)

    heading: str
    id: str
    text: str
    why: str  # "superseded" or "over the budget"


class BriefingPreview(BaseModel):
    """The briefing a new session of a project would be given now, as the hook gives it."""

    model_config = ConfigDict(frozen=True)

    project: str
    text: str
    budget: int
    left_out: tuple[LeftOut, ...]


def briefing_preview(
    reads: Reads, ws: WorkspaceName, project: str, max_chars: int, deadline: Deadline
) -> BriefingPreview:
    """`briefing_text` itself (the very text the session-start hook prints), and the items
    it read but left out: superseded memories, and those the budget had no room for (an
    item is in the text when its id is)."""
    got = _read(reads, ws, project, deadline)
    text = got.text(project, max_chars)
    # Each section as far as its count (the slack read past it is the briefing's reserve).
    counts = {heading: n for heading, _, _, n in MEMORY_SECTIONS}
    read = [(h, records[: counts[h]]) for h, records in got.newest]
    read.append((SESSIONS_HEADING, got.sessions))
    superseded = got.superseded
    entries: list[tuple[str, str, str, bool]] = [
        (h, r.id, r.content, r.id in superseded) for h, records in read for r in records
    ]
    entries += [
        (FACTS_HEADING, f"fact:{f.id}", f"{f.subject} {f.predicate} {f.object}", False)
        for f in got.facts
    ]
    left = [
        LeftOut(heading=h, id=i, text=c, why="superseded" if gone else "over the budget")
        for h, i, c, gone in entries
        if gone or (f"id {i}," not in text and f"id {i})" not in text)
    ]
    return BriefingPreview(project=project, text=text, budget=max_chars, left_out=tuple(left))


def prompt_context(
    reads: Reads, ws: WorkspaceName, project: str, prompt: str, deadline: Deadline
) -> str:
    """At most PROMPT_MAX_MEMORIES memories of `project` clearly relevant to `prompt` (a
    cosine similarity of PROMPT_MIN_SCORE or more), under PROMPT_MAX_CHARS; else empty."""
    text = prompt.strip()[:2000]
    if not text:
        return ""
    asked = VectorQuery(workspace=ws, text=text, limit=10, filters=Filters(project=project))
    hits = [
        (rid, s) for rid, s in deadline.wait(reads.ask(asked), "prompt") if s >= PROMPT_MIN_SCORE
    ]
    if not hits:
        return ""
    found = deadline.wait(
        reads.ask(FetchRecords(workspace=ws, ids=tuple(rid for rid, _ in hits))), "prompt"
    )
    memories = [
        found[rid]
        for rid, _ in hits
        if rid in found and found[rid].kind in ("memory", "observation", SUMMARY_KIND)
    ][:PROMPT_MAX_MEMORIES]
    head = f"Imprint memories of project {project} that may bear on this prompt:"
    lines = [head, FRAME, FENCE]
    size = sum(len(line) + 1 for line in lines) + len(FENCE)
    for record in memories:
        line = item(record_entry(record))
        if size + 1 + len(line) > PROMPT_MAX_CHARS - 1:
            break
        lines.append(line)
        size += 1 + len(line)
    return "\n".join([*lines, FENCE]) if len(lines) > 3 else ""


def hook_context(runtime: Runtime, asked: HookRequest) -> str:
    """The context for one hook event of a session in `asked.cwd`; empty when its project
    is unknown, excluded, or has nothing to say."""
    reads = ActorReads(runtime)
    ws = reads.open(asked.workspace)
    cwd = Path(asked.cwd)
    with call_deadline(asked.deadline_ms / 1000) as deadline:
        project = project_for(reads, ws, cwd, deadline, runtime.data_dir)
        if not project or excluded(cwd, project, asked.exclude):
            return ""
        if asked.event == "session-start":
            return briefing_text(reads, ws, project, asked.context_chars, deadline)
        return prompt_context(reads, ws, project, asked.prompt, deadline)
