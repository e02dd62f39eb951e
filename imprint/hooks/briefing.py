"""What a hook adds to a session: the session-start briefing and the memories relevant to
a prompt, for the project the session's folder maps to.

The daemon computes both (`imprint.daemon.hosting.answer_hook`), and the MCP server offers
the briefing as a resource per project and as a prompt. Everything is read through
`Reads`, so the briefing sees exactly what search sees.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

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
from imprint.hooks.settings import excluded_folder
from imprint.reads.deadline import Deadline, call_deadline
from imprint.reads.gateway import ActorReads, Reads
from imprint.reads.layout import clip, escape_field, one_line
from imprint.store.records import (
    SESSION_SUMMARY_KIND,
    Fact,
    Filters,
    Record,
    project_from_folder,
)
from imprint.types import WorkspaceName

if TYPE_CHECKING:
    from imprint.actors.lifecycle import Runtime

__all__ = [
    "PROMPT_MAX_CHARS",
    "PROMPT_MIN_SCORE",
    "SUMMARY_KIND",
    "HookRequest",
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
ITEM_CHARS = 240
# A session summary says most per line (its decisions, then errors and their fixes): up to
# this much of it, within a third of the budget.
SESSION_CHARS = 600
# A line beyond its text: "- ", " (id <16 hex>, YYYY-MM-DD)", the newline, a heading.
_ENTRY_OVERHEAD = 60
# (heading, record types, record kinds, how many to read); facts and sessions follow.
_SECTIONS: tuple[tuple[str, tuple[str, ...], tuple[str, ...], int], ...] = (
    ("Decisions", ("decision",), ("memory",), 4),
    ("Bugs and their fixes", ("bug",), ("memory",), 4),
    ("Preferences", ("preference",), ("memory",), 4),
)
_FACTS_HEADING = "Facts that hold now"
_SESSIONS_HEADING = "Last sessions"


class HookRequest(BaseModel):
    """One hook's question to the daemon (`imprint hook` sends it as the hello)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    event: Literal["session-start", "prompt-submit"]
    cwd: str
    prompt: str = ""
    context_chars: int = Field(default=2000, ge=200, le=20_000)
    exclude: tuple[str, ...] = ()
    deadline_ms: int = Field(default=1500, ge=1, le=60_000)
    workspace: str = ""


def excluded(cwd: Path, project: str, exclude: Sequence[str]) -> bool:
    """Whether `hooks.exclude` names this project or a folder the session is in."""
    return project in exclude or excluded_folder(cwd, exclude)


def _repo_name(cwd: Path) -> str:
    """The name of the folder holding `.git` at or above `cwd`; `cwd`'s own name else."""
    for folder in [cwd, *cwd.parents]:
        if (folder / ".git").exists():
            return folder.name
    return cwd.name


def project_for(reads: Reads, ws: WorkspaceName, cwd: Path, deadline: Deadline) -> str:
    """The project a session in `cwd` works on: the one whose ingested folder holds `cwd`
    (the deepest), else the known project named after its repository's folder (as
    `ingest_path` names one); "" when neither."""
    here = cwd.resolve()
    roots = deadline.wait(reads.ask(ProjectRoots(workspace=ws)), "briefing")
    best, depth = "", -1
    for project, root in roots:
        folder = Path(root)
        if (here == folder or folder in here.parents) and len(folder.parts) > depth:
            best, depth = project, len(folder.parts)
    if best:
        return best
    known = {name for name, _ in deadline.wait(reads.ask(Projects(workspace=ws)), "briefing")}
    guess = project_from_folder(_repo_name(here))
    return guess if guess in known else ""


_Entry = tuple[str, str, float]  # text, id, when


def _item(entry: _Entry, width: int = ITEM_CHARS) -> str:
    text, record_id, at = entry
    when = time.strftime("%Y-%m-%d", time.gmtime(at)) if at else ""
    where = ", ".join(part for part in (record_id and f"id {record_id}", when) if part)
    body = clip(escape_field(one_line(text)), width)
    return f"- {body}" + (f" ({where})" if where else "")


def _fact_entry(fact: Fact) -> _Entry:
    return (f"{fact.subject} {fact.predicate} {fact.object}", f"fact:{fact.id}", fact.valid_from)


def _record_entry(record: Record) -> _Entry:
    return (record.content, record.id, record.created_at)


def briefing_text(
    reads: Reads, ws: WorkspaceName, project: str, max_chars: int, deadline: Deadline
) -> str:
    """The session-start briefing for `project`: its newest decisions, bugs with their
    fixes, preferences, the facts about it that hold now and its last sessions, then how to
    search for more; at most `max_chars`. Empty when the project has none of these."""
    asks = [
        (heading, reads.ask(Newest(workspace=ws, project=project, types=t, kinds=k, limit=n)))
        for heading, t, k, n in _SECTIONS
    ]
    sessions = reads.ask(Newest(workspace=ws, project=project, kinds=(SUMMARY_KIND,), limit=2))
    facts = reads.ask(FactQuery(workspace=ws, subject=project, limit=5))
    newest = [(heading, deadline.wait(pending, "briefing")) for heading, pending in asks]
    # A memory superseded by a newer one no longer holds: left out, as search leaves it out.
    ids = tuple(r.id for _, records in newest for r in records)
    links = deadline.wait(reads.ask(SupersedeLinks(workspace=ws, ids=ids)), "briefing")
    superseded = {link.old for link in links} if ids else set()
    sections: list[tuple[str, list[_Entry]]] = [
        (heading, [_record_entry(r) for r in records if r.id not in superseded])
        for heading, records in newest
    ]
    sections.append((_FACTS_HEADING, [_fact_entry(f) for f in deadline.wait(facts, "briefing")]))
    sections.append(
        (_SESSIONS_HEADING, [_record_entry(r) for r in deadline.wait(sessions, "briefing")])
    )
    filled = sum(1 for _, entries in sections if entries)
    if not filled:
        return ""
    head = f"Imprint memory for project {project} (newest first):"
    foot = (
        f'For more: search(query, project="{project}") or recall(question); '
        "get_memory(id) shows a whole memory."
    )
    room = max_chars - len(head) - len(foot) - 2
    # Each section's newest entry fits before any second one: clipped to its share of the
    # budget (past its heading, id and date), then taken round-robin over the sections.
    # The last session's summary is kept wider (its share set aside first); every other
    # section's newest entry gets an equal share of the rest.
    sessions_shown = bool(sections[-1][1])
    others = filled - sessions_shown
    session_width = 0
    if sessions_shown:
        share = room // 3 if others else room
        session_width = max(60, min(SESSION_CHARS, share - _ENTRY_OVERHEAD))
    rest = room - (session_width + _ENTRY_OVERHEAD if sessions_shown else 0)
    width = max(60, min(ITEM_CHARS, rest // max(others, 1) - _ENTRY_OVERHEAD))
    kept: list[list[str]] = [[] for _ in sections]
    longest = max(len(entries) for _, entries in sections)
    for place in range(longest):
        for index, (heading, entries) in enumerate(sections):
            if place >= len(entries):
                continue
            wide = sessions_shown and index == len(sections) - 1
            line = _item(entries[place], session_width if wide else width)
            cost = len(line) + 1 + (0 if kept[index] else len(heading) + 2)
            if cost <= room:
                kept[index].append(line)
                room -= cost
    lines = [head]
    for (heading, _), items in zip(sections, kept, strict=True):
        if items:
            lines += [f"{heading}:", *items]
    lines.append(foot)
    return "\n".join(lines)


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
        if rid in found and found[rid].kind in ("memory", SUMMARY_KIND)
    ][:PROMPT_MAX_MEMORIES]
    head = f"Imprint memories of project {project} that may bear on this prompt:"
    lines = [head]
    size = len(head)
    for record in memories:
        line = _item(_record_entry(record))
        if size + 1 + len(line) > PROMPT_MAX_CHARS - 1:
            break
        lines.append(line)
        size += 1 + len(line)
    return "\n".join(lines) if len(lines) > 1 else ""


def hook_context(runtime: Runtime, asked: HookRequest) -> str:
    """The context for one hook event of a session in `asked.cwd`; empty when its project
    is unknown, excluded, or has nothing to say."""
    reads = ActorReads(runtime)
    ws = reads.open(asked.workspace)
    cwd = Path(asked.cwd)
    with call_deadline(asked.deadline_ms / 1000) as deadline:
        project = project_for(reads, ws, cwd, deadline)
        if not project or excluded(cwd, project, asked.exclude):
            return ""
        if asked.event == "session-start":
            return briefing_text(reads, ws, project, asked.context_chars, deadline)
        return prompt_context(reads, ws, project, asked.prompt, deadline)
