"""The session-start briefing's text, from rows already read: which project a folder is, and
how its newest decisions, bugs, preferences, facts and sessions fit in the budget.

Both briefings use it: the daemon's (`imprint.hooks.briefing`, rows through the reader
actors) and the hook's own when no daemon answers yet (`imprint.hooks.cold`, rows straight
from the store's SQLite file). The standard library only (the rows are duck-typed), so a
hook process can lay a briefing out without importing the read side.
"""

from __future__ import annotations

import time
from collections.abc import Container, Iterable, Sequence
from pathlib import Path
from typing import Protocol

from imprint._shown import clip, one_line, shown

__all__ = [
    "FACTS_HEADING",
    "ITEM_CHARS",
    "MEMORY_SECTIONS",
    "SESSIONS_HEADING",
    "SESSIONS_SHOWN",
    "SUPERSEDED_SLACK",
    "Entry",
    "Fact",
    "Record",
    "compose_briefing",
    "fact_entry",
    "item",
    "pick_project",
    "record_entry",
    "repo_name",
]

ITEM_CHARS = 240
# A session summary says most per line (its decisions, then errors and their fixes): up to
# this much of it, within a third of the budget.
SESSION_CHARS = 600
# A line beyond its text: "- ", " (id <16 hex>, YYYY-MM-DD)", the newline, a heading.
_ENTRY_OVERHEAD = 60
FACTS_HEADING = "Facts that hold now"
# (heading, record types, record kinds, how many to show); the facts of the knowledge graph
# join the section headed FACTS_HEADING, the last sessions follow. `memory` is what a client
# stored, `observation` and `open-problem` what capture extracted (`imprint.capture.observe`).
MEMORY_SECTIONS: tuple[tuple[str, tuple[str, ...], tuple[str, ...], int], ...] = (
    ("Decisions", ("decision",), ("memory", "observation"), 10),
    ("Bugs and their fixes", ("bug",), ("memory", "observation"), 3),
    ("Preferences", ("preference",), ("memory", "observation"), 8),
    (FACTS_HEADING, ("finding",), ("observation",), 6),
    ("Open problems", ("bug",), ("open-problem",), 2),
)
# Read past each section's count: the superseded among them are left out afterwards.
SUPERSEDED_SLACK = 10
# Standing instructions come before any section's second line (they hold until replaced);
# past each section's newest line, what holds now (decisions, facts) comes before further
# fixes and open problems, which take one line for every LATER_LINES of the others.
ALWAYS_SHOWN = frozenset({"Preferences"})
LATER_LINES = {"Bugs and their fixes": 3, "Open problems": 3}
FACTS_SHOWN = 5
SESSIONS_HEADING = "Last sessions"
SESSIONS_SHOWN = 2

Entry = tuple[str, str, float]  # text, id, when


class Record(Protocol):
    """What a briefing reads of a record (`imprint.store.records.Record`)."""

    @property
    def id(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def created_at(self) -> float: ...


class Fact(Protocol):
    """What a briefing reads of a fact (`imprint.store.records.Fact`)."""

    @property
    def id(self) -> str: ...
    @property
    def subject(self) -> str: ...
    @property
    def predicate(self) -> str: ...
    @property
    def object(self) -> str: ...
    @property
    def valid_from(self) -> float: ...


def repo_name(cwd: Path) -> str:
    """The name of the folder holding `.git` at or above `cwd`; `cwd`'s own name else."""
    for folder in [cwd, *cwd.parents]:
        if (folder / ".git").exists():
            return folder.name
    return cwd.name


def pick_project(
    cwd: Path, roots: Iterable[tuple[str, str]], known: Iterable[str], guess: str
) -> str:
    """The project of a session in `cwd` (resolved): the one whose ingested folder
    (`roots`: project, folder) holds it, the deepest; else `guess` (the project named after
    its repository's folder) when it is `known`; "" when neither."""
    best, depth = "", -1
    for project, root in roots:
        folder = Path(root)
        if (cwd == folder or folder in cwd.parents) and len(folder.parts) > depth:
            best, depth = project, len(folder.parts)
    if best:
        return best
    return guess if guess in set(known) else ""


def item(entry: Entry, width: int = ITEM_CHARS) -> str:
    """One briefing line: the text on one line, clipped, then its id and date."""
    text, record_id, at = entry
    when = time.strftime("%Y-%m-%d", time.gmtime(at)) if at else ""
    where = ", ".join(part for part in (record_id and f"id {record_id}", when) if part)
    body = clip(shown(one_line(text)), width)
    return f"- {body}" + (f" ({where})" if where else "")


def fact_entry(fact: Fact) -> Entry:
    return (f"{fact.subject} {fact.predicate} {fact.object}", f"fact:{fact.id}", fact.valid_from)


def record_entry(record: Record) -> Entry:
    return (record.content, record.id, record.created_at)


def compose_briefing(
    project: str,
    memories: Sequence[tuple[str, Sequence[Record]]],
    superseded: Container[str],
    facts: Sequence[Fact],
    sessions: Sequence[Record],
    max_chars: int,
) -> str:
    """The briefing for `project`: each memory section's records (newest first, those in
    `superseded` left out), the facts that hold now and the last sessions' summaries, then
    how to search for more; at most `max_chars`. Empty when there is none of these."""
    shown = {heading: n for heading, _, _, n in MEMORY_SECTIONS}
    sections: list[tuple[str, list[Entry]]] = [
        (
            heading,
            [record_entry(r) for r in records if r.id not in superseded][: shown.get(heading)],
        )
        for heading, records in memories
    ]
    graph = [fact_entry(f) for f in facts]
    merged = next((entries for heading, entries in sections if heading == FACTS_HEADING), None)
    if merged is None:
        sections.append((FACTS_HEADING, graph))
    else:  # the graph's facts and the facts capture kept, newest first
        merged[:] = sorted(graph + merged, key=lambda entry: -entry[2])
    sections.append((SESSIONS_HEADING, [record_entry(r) for r in sessions]))
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
        # What holds now comes first: with many sections the summary gets a quarter.
        share = (room // 4 if others >= 4 else room // 3) if others else room
        session_width = max(60, min(SESSION_CHARS, share - _ENTRY_OVERHEAD))
    rest = room - (session_width + _ENTRY_OVERHEAD if sessions_shown else 0)
    width = max(60, min(ITEM_CHARS, rest // max(others, 1) - _ENTRY_OVERHEAD))
    kept: list[list[str]] = [[] for _ in sections]
    order = sorted(
        (0 if heading in ALWAYS_SHOWN else place * LATER_LINES.get(heading, 1), index, place)
        for index, (heading, entries) in enumerate(sections)
        for place in range(len(entries))
    )
    for _, index, place in order:
        heading, entries = sections[index]
        if place > len(kept[index]):
            continue  # an earlier line of this section did not fit: nor does this one
        wide = sessions_shown and index == len(sections) - 1
        line = item(entries[place], session_width if wide else width)
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
