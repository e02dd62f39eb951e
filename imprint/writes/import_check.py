"""An export or sync file read and checked before anything of it is written (`read_export`,
for `imprint.writes.imports`; `check_line` and `check_trusted`, for `imprint.writes.sync`
too): its header, its version, every line, the counts the header promised.

A file from elsewhere is untrusted (DESIGN 12): a line whose times are not finite, are
negative or lie past this computer's clock by more than FUTURE_SKEW_SEC, a memory longer than
store's own limit, a kind only capture or ingest gives, an id this store holds as a record of
another kind (or of another source), or a line longer than MAX_LINE_BYTES (skipped unread) is
refused and counted by its reason (`Refused`), and the rest of the file goes on; `line()`
says how many were refused and why.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ValidationError

from imprint._fs import bounded_lines
from imprint.errors import InputError
from imprint.reads.export import (
    FORMAT,
    READ_VERSIONS,
    Counts,
    FactLine,
    Header,
    Link,
    MemoryLine,
    SourceLine,
)
from imprint.reads.memory import check_id
from imprint.store.records import (
    RECORD_TYPES,
    SESSION_SUMMARY_KIND,
    SupersedeLink,
    check_project,
    make_id,
)
from imprint.types import MemoryId
from imprint.workspaces import validate_name
from imprint.writes.memories import MAX_MEMORY_CHARS

__all__ = [
    "FUTURE_SKEW_SEC",
    "MAX_LINE_BYTES",
    "OTHER_KIND",
    "TOO_LONG",
    "ExportFile",
    "Refused",
    "WorkspaceLines",
    "check_line",
    "check_trusted",
    "first_error",
    "read_export",
    "refused_words",
]

MAX_TAG_CHARS = 200
# The longest line an export or sync file may hold; a longer one is skipped unread. A source
# line holds a whole file's chunks: one of `ingest.max_file_bytes`' highest setting (64 MiB),
# overlap and JSON escapes included, fits.
MAX_LINE_BYTES = 128 * 1024 * 1024
# How far past this computer's clock a time in a file may lie (the other machine's clock runs
# a little ahead); a later time would rank its line above everything stored here until then.
FUTURE_SKEW_SEC = 300.0
# The kinds a memory line may claim: what `store` gives ("" from before kinds), and capture's
# session summary under the id capture gives it (`_capture_summary`). A chunk claims neither.
MEMORY_KINDS = ("", "memory")
# Why a line was refused, the words `refused_words` counts them by.
TOO_LONG = f"longer than {MAX_LINE_BYTES} bytes (skipped unread)"
BAD_TIME = (
    "with a time that is not finite, is negative or is later than now plus "
    f"{FUTURE_SKEW_SEC / 60:g} minutes"
)
TOO_BIG = f"with a memory longer than {MAX_MEMORY_CHARS} characters"
BAD_KIND = "claiming a kind only capture or ingest gives"
OTHER_KIND = "whose id this store holds as a record of another kind or source"
# The first line of capture's session summary (`imprint.capture.summary.summary_text`).
_SUMMARY_HEAD = re.compile(r"Session in project (.+) \(\d+ turns, id (\S+)\):")
_KINDS: dict[str, type[BaseModel]] = {
    "memory": MemoryLine,
    "source": SourceLine,
    "fact": FactLine,
}


@dataclass
class WorkspaceLines:
    memories: list[MemoryLine] = field(default_factory=list)
    sources: list[SourceLine] = field(default_factory=list)
    facts: list[FactLine] = field(default_factory=list)
    numbers: dict[str, int] = field(default_factory=dict)  # a memory's line number, by id
    # Refused lines (`Refused`), as the header counts them, and the refused memories' ids:
    # a link to one of those is left out, not a damaged file.
    refused: Counts = field(default_factory=Counts)
    refused_ids: set[str] = field(default_factory=set)

    def links(self) -> list[SupersedeLink]:
        return [
            SupersedeLink(old=MemoryId(old.id), new=MemoryId(m.id), at=old.at)
            for m in self.memories
            for old in m.supersedes
            if old.id not in self.refused_ids
        ]

    def refuse(self, line: BaseModel) -> None:
        r = self.refused
        if isinstance(line, MemoryLine):
            self.refused_ids.add(line.id)
        chunks = len(line.chunks) if isinstance(line, SourceLine) else 0
        self.refused = Counts(
            memories=r.memories + isinstance(line, MemoryLine),
            sources=r.sources + isinstance(line, SourceLine),
            chunks=r.chunks + chunks,
            facts=r.facts + isinstance(line, FactLine),
        )

    def counts(self) -> Counts:
        chunks = sum(len(s.chunks) for s in self.sources)
        return Counts(
            memories=len(self.memories),
            sources=len(self.sources),
            chunks=chunks,
            facts=len(self.facts),
        )


@dataclass
class ExportFile:
    """A whole export file, checked line by line."""

    header: Header
    workspaces: dict[str, WorkspaceLines]
    lines: int
    refused: Counter[str] = field(default_factory=Counter)  # lines not taken, by reason

    @property
    def records(self) -> int:
        return sum(c.memories + c.chunks for c in self.header.workspaces.values())


class Refused(InputError):
    """A line this store does not take, for a reason counted in words; the rest of the file
    goes on (a damaged file, by contrast, is refused whole)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def refused_words(refused: Counter[str]) -> str:
    """`N lines refused (n why, ...)`, or empty when none was."""
    total = sum(refused.values())
    if not total:
        return ""
    why = ", ".join(f"{n} {reason}" for reason, n in sorted(refused.items()))
    return f"{total} line{'s' if total != 1 else ''} refused ({why})"


def _times(line: BaseModel) -> list[float]:
    if isinstance(line, MemoryLine):
        links = [*line.supersedes, *([line.superseded_by] if line.superseded_by else [])]
        return [line.created_at, *(link.at for link in links)]
    if isinstance(line, SourceLine):
        return [line.mtime, *(t for c in line.chunks for t in (c.created_at, c.source_mtime))]
    if isinstance(line, FactLine):
        return [line.valid_from, *([line.ended] if line.ended is not None else [])]
    at = getattr(line, "at", None)  # a sync file's tombstone and link lines
    return [at] if isinstance(at, float) else []


def _capture_summary(line: MemoryLine) -> bool:
    """Whether a memory is a session summary as capture writes one: its first line names its
    project and session, and its id is the one capture gives that pair."""
    head = _SUMMARY_HEAD.fullmatch(line.content.split("\n", 1)[0])
    return (
        head is not None
        and head.group(1) == (line.project or "-")
        and line.id == make_id(SESSION_SUMMARY_KIND, line.project, head.group(2))
    )


def check_trusted(line: BaseModel, latest: float) -> None:
    """What a well-formed line from elsewhere must also be to be taken; Refused says why
    not. `latest`: the latest time allowed (now plus FUTURE_SKEW_SEC)."""
    # `not <=` refuses NaN too: every comparison with it is false.
    if any(not (0.0 <= t <= latest) for t in _times(line)):
        raise Refused(BAD_TIME)
    if isinstance(line, MemoryLine):
        if len(line.content.strip()) > MAX_MEMORY_CHARS:
            raise Refused(TOO_BIG)
        kind = line.tags.kind
        if kind not in MEMORY_KINDS and not (
            kind == SESSION_SUMMARY_KIND and _capture_summary(line)
        ):
            raise Refused(BAD_KIND)
    if isinstance(line, SourceLine) and any(
        c.tags.kind in (*MEMORY_KINDS[1:], SESSION_SUMMARY_KIND) for c in line.chunks
    ):
        raise Refused(BAD_KIND)


def first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    return f"{where}: {error['msg']}" if where else str(error["msg"])


def _check_tags(tags: object, type: str) -> None:
    if type not in RECORD_TYPES:
        raise InputError(f"type: {type!r} is not allowed; one of {', '.join(RECORD_TYPES)}")
    # Not `check_tag`, the rule for a tag a caller gives: ingest's own topics are words of
    # the text of any length (`create_connected_server_and_client_session`), and an export
    # carries them as the store holds them.
    for value in (*getattr(tags, "domains", ()), *getattr(tags, "topics", ())):
        if not value or len(value) > MAX_TAG_CHARS or not value.isprintable():
            raise InputError(
                f"tags: {value[:60]!r} is not a tag; 1-{MAX_TAG_CHARS} printable characters"
            )


def check_line(line: BaseModel, seen: set[tuple[str, str]], latest: float | None = None) -> None:
    """What a record must be, beyond its fields' types; InputError names the field, Refused
    (`check_trusted`) a line well formed but not taken. `latest`: see `check_trusted`."""
    ws = str(getattr(line, "workspace", ""))
    validate_name(ws)
    if isinstance(line, FactLine):
        ids: Iterable[str] = [f"fact:{line.id}"]
        check_id(line.id)
    elif isinstance(line, MemoryLine):
        check_project(line.project)
        check_id(line.id)
        for old in line.supersedes:
            check_id(old.id, "supersedes")
        if line.superseded_by is not None:
            check_id(line.superseded_by.id, "superseded_by")
        if not line.content.strip():
            raise InputError("content: must be non-empty text")
        _check_tags(line.tags, line.type)
        ids = [line.id]
    else:
        assert isinstance(line, SourceLine)
        check_project(line.project)
        if not line.source.strip():
            raise InputError("source: must be a source name")
        for chunk in line.chunks:
            check_id(chunk.id)
            _check_tags(chunk.tags, chunk.type)
        ids = [c.id for c in line.chunks] + [f"source:{line.project}|{line.source}"]
    check_trusted(line, time.time() + FUTURE_SKEW_SEC if latest is None else latest)
    for key in ids:
        if (ws, key) in seen:
            raise InputError(f"id: {key!r} is already on an earlier line")
        seen.add((ws, key))


def _header(data: object) -> Header:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InputError(f"not an Imprint export (its first line names no format {FORMAT!r})")
    version = data.get("version")
    if version not in READ_VERSIONS:
        known = ", ".join(str(v) for v in READ_VERSIONS)
        raise InputError(f"format version {version!r} is not known; this imprint reads {known}")
    return Header.model_validate(data)


def _check_links(ws: str, lines: WorkspaceLines) -> None:
    """Each supersede link is on both of its memories, at the same time; InputError naming
    the line of the memory whose side does not match."""
    by_id = {m.id: m for m in lines.memories}
    for m in lines.memories:
        where = f"import: line {lines.numbers[m.id]}"
        for old in m.supersedes:
            if old.id in lines.refused_ids:
                continue
            other = by_id.get(old.id)
            if old.id == m.id or other is None or other.superseded_by != Link(id=m.id, at=old.at):
                raise InputError(
                    f"{where}: supersedes: {old.id!r} is not a memory of workspace {ws!r} in "
                    "this file whose superseded_by names this one at the same time"
                )
        newer = by_id.get(m.superseded_by.id) if m.superseded_by else None
        if (
            m.superseded_by
            and m.superseded_by.id not in lines.refused_ids
            and (newer is None or Link(id=m.id, at=m.superseded_by.at) not in newer.supersedes)
        ):
            raise InputError(
                f"{where}: superseded_by: {m.superseded_by.id!r} is not a memory of workspace "
                f"{ws!r} in this file whose supersedes names this one at the same time"
            )
    # Each side matching is not enough: memories that supersede each other in a cycle each
    # have a successor, so none of them would be shown again.
    after = {
        m.id: m.superseded_by.id
        for m in lines.memories
        if m.superseded_by and m.superseded_by.id not in lines.refused_ids
    }
    done: set[str] = set()
    for m in lines.memories:
        chain: list[str] = []
        here: str | None = m.id
        while here is not None and here not in done and here not in chain:
            chain.append(here)
            here = after.get(here)
        done.update(chain)
        if here is not None and here in chain:
            cycle = chain[chain.index(here) :]
            raise InputError(
                f"import: line {max(lines.numbers[i] for i in cycle)}: supersedes: memories "
                f"{', '.join(cycle)} supersede each other in a cycle, which would hide them "
                "all; nothing was written"
            )


def _counts_match(header: Header, workspaces: dict[str, WorkspaceLines], unread: int) -> bool:
    """Whether the lines held and refused are those the header counts; with `unread` lines
    skipped unread (their workspace and kind unknown), their number must make up the rest."""
    held = {
        ws: Counts(**{k: n + getattr(w.refused, k) for k, n in w.counts().model_dump().items()})
        for ws, w in workspaces.items()
    }
    if not unread:
        return held == header.workspaces
    lines = ("memories", "sources", "facts")  # a chunk is not a line of its own
    promised = sum(getattr(c, k) for c in header.workspaces.values() for k in lines)
    found = sum(getattr(c, k) for c in held.values() for k in lines)
    return promised == found + unread


def read_export(path: Path) -> ExportFile:
    """The whole file, checked; InputError `import: line N: ...` at the first bad line. A
    line refused (`Refused`) is counted in `refused` and left out."""
    header: Header | None = None
    workspaces: dict[str, WorkspaceLines] = {}
    seen: set[tuple[str, str]] = set()
    refused: Counter[str] = Counter()
    latest = time.time() + FUTURE_SKEW_SEC
    number = 0
    with path.open("rb") as handle:
        for number, raw in enumerate(bounded_lines(handle, MAX_LINE_BYTES), 1):
            try:
                if raw is None:
                    if header is None:
                        raise InputError(f"its first line is {TOO_LONG}; not an Imprint export")
                    refused[TOO_LONG] += 1
                    continue
                if not raw.endswith(b"\n"):
                    raise InputError("cut short (no line end): the file is truncated")
                data = json.loads(raw.decode("utf-8"))
                if header is None:
                    header = _header(data)
                    workspaces = {ws: WorkspaceLines() for ws in header.workspaces}
                    continue
                kind = data.get("line") if isinstance(data, dict) else None
                model = _KINDS.get(str(kind))
                if model is None:
                    raise InputError(f"line: {kind!r} is not one of {', '.join(_KINDS)}")
                line = model.model_validate(data)
                place = workspaces.get(str(getattr(line, "workspace", "")))
                try:
                    check_line(line, seen, latest)
                except Refused as exc:
                    if place is None:
                        raise InputError("workspace: not one the header counts") from exc
                    refused[exc.reason] += 1
                    place.refuse(line)
                    continue
                if place is None:
                    raise InputError("workspace: not one the header counts")
                if isinstance(line, MemoryLine):
                    place.memories.append(line)
                    place.numbers[line.id] = number
                elif isinstance(line, SourceLine):
                    place.sources.append(line)
                elif isinstance(line, FactLine):
                    place.facts.append(line)
            except UnicodeDecodeError as exc:
                raise InputError(f"import: line {number}: not UTF-8 ({exc.reason})") from exc
            except ValueError as exc:  # JSON, and pydantic's ValidationError
                why = first_error(exc) if isinstance(exc, ValidationError) else str(exc)
                raise InputError(f"import: line {number}: not a valid line ({why})") from exc
            except InputError as exc:
                raise InputError(f"import: line {number}: {exc}") from exc
    if header is None:
        raise InputError(f"import: line 1: {path} is empty; not an Imprint export")
    if not _counts_match(header, workspaces, refused[TOO_LONG]):
        counted = {ws: c.model_dump() for ws, c in header.workspaces.items()}
        held = {ws: w.counts().model_dump() for ws, w in workspaces.items()}
        gone = f" ({refused_words(refused)})" if refused else ""
        raise InputError(
            f"import: line {number + 1}: the file ends after {number} lines, but its "
            f"header counts {counted} and the lines hold {held} beside those refused{gone}: "
            "the file is truncated or edited; nothing was written"
        )
    for ws in header.workspaces:
        _check_links(ws, workspaces[ws])
    return ExportFile(header=header, workspaces=workspaces, lines=number, refused=refused)
