"""The files `imprint sync` keeps in a shared folder, and reading them back.

Each machine writes only into its own folder, `DIR/<instance id>/`, one new file per sync
that had something to say: `000001.jsonl`, `000002.jsonl`, ... Each file is written beside
its final name and renamed onto it (`_fs.atomic_write_lines`), so a sync tool or a git
commit never sees half of one, and no file is ever written twice.

A file is JSON Lines: a header (the format, its version, the machine, the file's number and
how many lines follow), then lines in the export's format (`imprint.reads.export`: memories,
sources with their chunks, facts), and two kinds of its own: a tombstone (a memory or source
this machine deleted, and when) and a supersede link (old, new, when). Supersede links travel
only as link lines: a memory line's own `supersedes` and `superseded_by` are left empty, and
a source travels without its registry root (a folder of one machine, never of another).

The folder is untrusted: a line is read only up to MAX_LINE_BYTES (a longer one is skipped
unread), and a well-formed line the store does not take (`import_check.check_trusted`) is counted
by its reason in `Shared.refused`; a damaged file is refused whole.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ValidationError

from imprint._fs import atomic_write_lines, bounded_lines, made_dir
from imprint.errors import InputError
from imprint.reads.export import ExportLine, FactLine, MemoryLine, SourceLine, line_text
from imprint.store.tombstones import fact_mark, memory_mark, source_mark
from imprint.workspaces import validate_name
from imprint.writes.import_check import (
    FUTURE_SKEW_SEC,
    MAX_LINE_BYTES,
    TOO_LONG,
    Refused,
    check_line,
    check_trusted,
    first_error,
)

__all__ = [
    "SYNC_FORMAT",
    "SYNC_VERSION",
    "Item",
    "LinkLine",
    "Shared",
    "TombstoneLine",
    "item_of",
    "read_folder",
    "write_file",
]

SYNC_FORMAT = "imprint-sync"
# 2: a source's chunks carry `head` (a later piece's signature). A version 1 reader refuses a
# version 2 file by its header, in words, not by an unknown field; version 1 files are read
# (those an earlier build wrote with `head` too).
SYNC_VERSION = 2
SYNC_READS = (1, 2)
FILE_RE = re.compile(r"^(\d{6,})\.jsonl$")
MACHINE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


class SyncHeader(ExportLine):
    line: Literal["header"] = "header"
    format: str
    version: int
    machine: str
    seq: int
    lines: int


class TombstoneLine(ExportLine):
    line: Literal["tombstone"] = "tombstone"
    workspace: str
    key: str
    at: float


class LinkLine(ExportLine):
    line: Literal["link"] = "link"
    workspace: str
    old: str
    new: str
    at: float


Line = MemoryLine | SourceLine | FactLine | TombstoneLine | LinkLine
_KINDS: dict[str, type[BaseModel]] = {
    "memory": MemoryLine,
    "source": SourceLine,
    "fact": FactLine,
    "tombstone": TombstoneLine,
    "link": LinkLine,
}


@dataclass(frozen=True)
class Item:
    """One line about one key (`memory:<id>`, `source:<project>|<name>`, `fact:<id>`,
    `link:<old id>`), and where it came from (`file:line`, or `this store`)."""

    key: str
    line: Line
    where: str
    text: str

    @property
    def dead(self) -> bool:
        return isinstance(self.line, TombstoneLine)

    @property
    def version(self) -> float:
        """When this state of the key came to be: a tombstone beats a record older than it."""
        line = self.line
        if isinstance(line, TombstoneLine | LinkLine):
            return line.at
        if isinstance(line, MemoryLine):
            return line.created_at
        if isinstance(line, FactLine):
            return line.valid_from
        return max((c.created_at for c in line.chunks), default=line.mtime)


def _key(line: Line) -> str:
    if isinstance(line, MemoryLine):
        return memory_mark(line.id)
    if isinstance(line, SourceLine):
        return source_mark(line.project, line.source)
    if isinstance(line, FactLine):
        return fact_mark(line.id)
    if isinstance(line, LinkLine):
        return f"link:{line.old}"
    return line.key


def item_of(line: Line, where: str) -> Item:
    if isinstance(line, MemoryLine) and (line.supersedes or line.superseded_by):
        # Links travel as link lines: neither end of one is part of a memory's own line.
        line = line.model_copy(update={"supersedes": (), "superseded_by": None})
    if isinstance(line, SourceLine) and line.root:
        # Neither sent nor taken (`imports.source_records`), so neither side's differs.
        line = line.model_copy(update={"root": ""})
    return Item(key=_key(line), line=line, where=where, text=line_text(line))


@dataclass
class Shared:
    """Everything in the folder: each workspace's items, and what was read."""

    items: dict[str, list[Item]]
    files: int
    machines: int
    own_last: int  # this machine's newest file number (0: none yet)
    refused: Counter[str] = field(default_factory=Counter)  # lines not taken, by reason


def _check_line(line: BaseModel, seen: set[tuple[str, str]], latest: float) -> None:
    if isinstance(line, TombstoneLine):
        validate_name(line.workspace)
        if not re.match(r"^(memory|source|fact):.", line.key):
            raise InputError(f"key: {line.key!r} is not a memory, source or fact key")
        check_trusted(line, latest)
    elif isinstance(line, LinkLine):
        validate_name(line.workspace)
        if not line.old or not line.new or line.old == line.new:
            raise InputError("old, new: two different memory ids")
        check_trusted(line, latest)
    else:
        check_line(line, seen, latest)


def _header(data: object, machine: str) -> SyncHeader:
    if not isinstance(data, dict) or data.get("format") != SYNC_FORMAT:
        raise InputError(f"not an Imprint sync file (no format {SYNC_FORMAT!r})")
    if data.get("version") not in SYNC_READS:
        raise InputError(
            f"format version {data.get('version')!r} is not known; this imprint reads "
            f"versions {', '.join(map(str, SYNC_READS))}"
        )
    header = SyncHeader.model_validate(data)
    if header.machine != machine:
        raise InputError(f"machine: {header.machine!r}, in {machine!r}'s folder")
    return header


def _record(data: object, seen: set[tuple[str, str]], latest: float) -> Line:
    kind = data.get("line") if isinstance(data, dict) else None
    model = _KINDS.get(str(kind))
    if model is None:
        raise InputError(f"line: {kind!r} is not one of {', '.join(_KINDS)}")
    line = model.model_validate(data)
    _check_line(line, seen, latest)
    return line  # type: ignore[return-value]


def _why(exc: Exception) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8"
    if isinstance(exc, ValidationError):
        return f"not a valid line ({first_error(exc)})"
    if isinstance(exc, InputError):
        return str(exc)
    return f"not a valid line ({exc})"  # JSON


def _read_file(path: Path, machine: str, refused: Counter[str]) -> list[tuple[int, Line]]:
    """The file's lines with their numbers, checked whole; InputError naming the file and
    the line. A line refused (`Refused`, or too long) is left out and counted in `refused`."""
    lines: list[tuple[int, Line]] = []
    header: SyncHeader | None = None
    seen: set[tuple[str, str]] = set()
    left_out: Counter[str] = Counter()
    latest = time.time() + FUTURE_SKEW_SEC
    count = 0
    with path.open("rb") as handle:
        for count, raw in enumerate(bounded_lines(handle, MAX_LINE_BYTES), 1):
            try:
                if raw is None:
                    if header is None:
                        raise InputError(f"its first line is {TOO_LONG}")
                    left_out[TOO_LONG] += 1
                    continue
                if not raw.endswith(b"\n"):
                    raise InputError("cut short (no line end): the file is truncated")
                data = json.loads(raw)  # bytes: decoded as UTF-8, or a UnicodeDecodeError
                if header is None:
                    header = _header(data, machine)
                else:
                    lines.append((count, _record(data, seen, latest)))
            except Refused as exc:
                left_out[exc.reason] += 1
            except (ValueError, InputError) as exc:  # ValueError: JSON, UTF-8, pydantic
                raise InputError(f"sync: {path}: line {count}: {_why(exc)}") from exc
    if header is None:
        raise InputError(f"sync: {path}: line 1: empty; not an Imprint sync file")
    held = len(lines) + left_out.total()
    if header.lines != held:
        raise InputError(
            f"sync: {path}: line {count + 1}: the header counts {header.lines} lines and the "
            f"file holds {held}: it is truncated or edited"
        )
    refused.update(left_out)
    return lines


def read_folder(folder: Path, me: str) -> Shared:
    """Every machine's files in `folder`, each read and checked whole, oldest first; an
    InputError (naming the file and line) at the first bad one."""
    items: dict[str, list[Item]] = {}
    refused: Counter[str] = Counter()
    files = machines = own_last = 0
    for sub in sorted(p for p in folder.iterdir() if p.is_dir() and MACHINE_RE.match(p.name)):
        numbered = sorted(
            (int(m.group(1)), p)
            for p in sub.iterdir()
            if p.is_file() and (m := FILE_RE.match(p.name))
        )
        if not numbered:
            continue
        machines += sub.name != me
        if sub.name == me:
            own_last = numbered[-1][0]
        for _, path in numbered:
            files += 1
            for number, line in _read_file(path, sub.name, refused):
                items.setdefault(line.workspace, []).append(item_of(line, f"{path}:{number}"))
    return Shared(items=items, files=files, machines=machines, own_last=own_last, refused=refused)


def write_file(folder: Path, me: str, seq: int, items: list[Item]) -> Path:
    """This machine's next file, renamed into place whole."""
    own = made_dir(folder / me)  # the shared folder's own mode is not Imprint's to narrow
    target = own / f"{seq:06d}.jsonl"
    while target.exists():  # another sync of this machine's just wrote that number
        seq += 1
        target = own / f"{seq:06d}.jsonl"
    header = SyncHeader(
        format=SYNC_FORMAT, version=SYNC_VERSION, machine=me, seq=seq, lines=len(items)
    )
    atomic_write_lines(target, [line_text(header), *(i.text for i in items)], narrow=False)
    return target
