"""`imprint sync DIR`: two machines of one user keep the same memories through a shared
folder (a synced folder, a git repository).

Each sync reads every machine's files in DIR (`_sync_files`), each checked whole, and takes
one consistent snapshot of each workspace here (`imprint.store.dump`). Key by key (a memory,
a source, a fact, a supersede link) it compares what the folder says with what this store
holds, and decides:
- what only this store has, or has newer, is written into this machine's next file; so is a
  tombstone for what this store deleted (`imprint.store.tombstones`) and the folder still
  holds, unless the folder's copy is newer than the deletion (stored again elsewhere since);
- what the folder has newer than this store, or this store never had, is written here
  through the workspace's writer (embedded with the local model); a tombstone in the folder
  deletes the record here unless this store's copy is newer than it, so an older record
  never brings a deleted one back.
"Newer" is the record's own time: a memory's `created_at`, a source's newest chunk, a
fact's `valid_from`, a link's `at`; a fact that ended wins over the same fact still open.
The same id always means the same content: a memory (or chunk, or fact) whose id is held
with other text is refused with a one-line error naming the id, before anything is written
(a session's summary memory is the exception: capture rewrites it in place, so the newer
one wins).
The folder is untrusted (DESIGN 12): a line with a time past this computer's clock (beyond a
small skew), a memory or chunk on an id this store or the folder holds as another kind of
record (or another source's chunk), and the other lines `import_check.check_trusted` refuses are
left out and counted in the sync's line; the rest goes on. A line this store took once (a
record, a tombstone) never replaces or deletes what is here again: what is here now was
stored here after it, whatever either clock says.
Everything is checked and decided before the first write, so a refused sync writes nothing;
a sync cut short is finished by running it again, and a second run changes nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from imprint._faults import failpoint
from imprint.errors import SQLITE_FILE, InputError
from imprint.reads.export import FactLine, MemoryLine, SourceLine, workspace_lines
from imprint.store.dump import dump
from imprint.store.records import (
    SESSION_SUMMARY_KIND,
    Fact,
    Record,
    SourceEntry,
    SupersedeLink,
    WriteBatch,
)
from imprint.types import MemoryId, WorkspaceName
from imprint.workspaces import list_workspaces, workspace_dir
from imprint.writes._sync_files import (
    Item,
    LinkLine,
    Shared,
    TombstoneLine,
    item_of,
    read_folder,
    write_file,
)
from imprint.writes.gateway import Writes
from imprint.writes.import_check import OTHER_KIND, refused_words
from imprint.writes.imports import BATCH_RECORDS, memory_record, source_records

__all__ = ["sync_folder"]

_HERE = "this store"
_LINES: dict[str, type[BaseModel]] = {"memory": MemoryLine, "source": SourceLine, "fact": FactLine}


# Why a link line is not taken: it would hide every memory of a chain (see `_without_cycles`).
CYCLE = "closing a chain of supersedes into a cycle"


@dataclass
class _Plan:
    ws: WorkspaceName
    publish: list[Item] = field(default_factory=list)
    memories: list[MemoryLine] = field(default_factory=list)
    sources: list[SourceLine] = field(default_factory=list)
    facts: list[FactLine] = field(default_factory=list)
    links: list[LinkLine] = field(default_factory=list)
    forget: list[str] = field(default_factory=list)  # memory ids
    drop: list[tuple[str, str]] = field(default_factory=list)  # (project, source)
    taken: list[tuple[str, str]] = field(default_factory=list)  # (key, sha) of lines taken
    # This store's roots: a source taken from the folder keeps the one it has here.
    roots: dict[tuple[str, str], str] = field(default_factory=dict)
    refused: int = 0  # the folder's lines on ids of another kind of record
    cyclic: int = 0  # the folder's links that would close a cycle of supersedes

    def take(self, item: Item) -> None:
        line = item.line
        if isinstance(line, MemoryLine):
            self.memories.append(line)
        elif isinstance(line, SourceLine):
            self.sources.append(line)
        elif isinstance(line, FactLine):
            self.facts.append(line)

    def delete(self, mine: Item) -> None:
        line = mine.line
        if isinstance(line, MemoryLine):
            self.forget.append(line.id)
        elif isinstance(line, SourceLine):
            self.drop.append((line.project, line.source))


@dataclass
class _Local:
    items: dict[str, Item]
    tombstones: dict[str, float]  # what this store deleted, and when
    taken: dict[str, str]  # the line last taken from the folder for each key, by its sha
    roots: dict[tuple[str, str], str]  # this store's own registry roots


def _local(data_dir: Path, ws: WorkspaceName) -> _Local:
    """This store's items (from one snapshot), its tombstones and those it took."""
    items: dict[str, Item] = {}
    with dump(workspace_dir(data_dir, ws) / SQLITE_FILE) as snapshot:
        for text in workspace_lines(ws, snapshot):
            data = json.loads(text)
            line = _LINES[data["line"]].model_validate(data)
            item = item_of(line, _HERE)  # type: ignore[arg-type]
            items[item.key] = item
        for link in snapshot.supersede_links():
            line = LinkLine(workspace=ws, old=link.old, new=link.new, at=link.at)
            items[f"link:{link.old}"] = item_of(line, _HERE)
        return _Local(items, snapshot.tombstones(), snapshot.sync_taken(), snapshot.roots())


def _content(item: Item) -> tuple[object, ...]:
    """What an id stands for; the rest (tags, dates, an end) may differ between copies."""
    line = item.line
    if isinstance(line, MemoryLine) and line.tags.kind == SESSION_SUMMARY_KIND:
        return ("summary", line.project)  # capture rewrites a session's summary in place
    if isinstance(line, MemoryLine):
        return ("memory", line.project, line.content)
    if isinstance(line, FactLine):
        return ("fact", line.subject, line.predicate, line.object, line.valid_from, line.source)
    return (type(line).__name__,)


def _refuse(what: str, one: str, other: str) -> InputError:
    return InputError(
        f"sync: {what} means different content in {one} and {other}; the same id must always "
        "mean the same content, so nothing was written"
    )


def _rank(item: Item) -> tuple[float, float, str]:
    line = item.line
    if isinstance(line, FactLine):  # an end travels: the ended copy wins, the earliest end
        ended = line.ended
        return (1.0, -ended, item.text) if ended is not None else (0.0, 0.0, item.text)
    if isinstance(line, SourceLine):  # the same chunks, touched since: the later mtime
        return (item.version, line.mtime, item.text)
    return (item.version, 0.0, item.text)


def _winner(a: Item, b: Item) -> Item:
    """Which of two items about one key holds: the same on every machine, in any order."""
    if a.text == b.text:
        return a
    if a.dead != b.dead:
        alive, dead = (b, a) if a.dead else (a, b)
        return alive if alive.version > dead.version else dead
    if not a.dead and _content(a) != _content(b):
        raise _refuse(f"id {a.key.split(':', 1)[1]!r}", a.where, b.where)
    return max(a, b, key=_rank)


def _check_chunks(items: Iterable[Item]) -> None:
    """A chunk id names one text wherever it is found."""
    seen: dict[str, tuple[str, str]] = {}
    for item in items:
        if isinstance(item.line, SourceLine):
            for chunk in item.line.chunks:
                was = seen.setdefault(chunk.id, (chunk.text, item.where))
                if was[0] != chunk.text:
                    raise _refuse(f"chunk id {chunk.id!r}", was[1], item.where)


def _record_ids(item: Item) -> list[str]:
    line = item.line
    if isinstance(line, MemoryLine):
        return [line.id]
    if isinstance(line, SourceLine):
        return [c.id for c in line.chunks]
    return []


def _one_id_space(shared: list[Item], local: Iterable[Item]) -> tuple[list[Item], int]:
    """The folder's items without those on a record id this store or the folder holds
    under another key (a chunk on a memory's id, a memory on a chunk's, a chunk of another
    source), and how many were left out: no line from elsewhere writes over another kind of
    record. An id this store holds keeps its record's key; of a clash only in the folder,
    every side is left out."""
    held = {rid: item.key for item in local for rid in _record_ids(item)}
    keys: dict[str, set[str]] = {}
    for item in shared:
        for rid in _record_ids(item):
            keys.setdefault(rid, set()).add(item.key)

    def own_key(item: Item, rid: str) -> bool:
        return held[rid] == item.key if rid in held else keys[rid] == {item.key}

    kept = [item for item in shared if all(own_key(item, rid) for rid in _record_ids(item))]
    return kept, len(shared) - len(kept)


def _sha(item: Item) -> str:
    return hashlib.sha256(item.text.encode("utf-8")).hexdigest()


def _tombstone(ws: str, key: str, at: float) -> Item:
    return item_of(TombstoneLine(workspace=ws, key=key, at=at), _HERE)


def _plan(data_dir: Path, ws: WorkspaceName, shared: list[Item]) -> _Plan:
    here = _local(data_dir, ws)
    local, tombs = here.items, here.tombstones
    _check_chunks([*shared, *local.values()])
    shared, refused = _one_id_space(shared, local.values())
    view: dict[str, Item] = {}
    for item in shared:
        view[item.key] = _winner(view[item.key], item) if item.key in view else item
    plan = _Plan(ws, refused=refused, roots=here.roots)
    keys = sorted(set(local) | set(view))
    for key in (k for k in keys if not k.startswith("link:")):
        mine, theirs = local.get(key), view.get(key)
        # A line taken here once never wins again: what this store holds now (or its
        # deletion) came after it, whatever the other machine's clock says.
        again = theirs is not None and here.taken.get(key) == _sha(theirs)
        if mine is None:
            assert theirs is not None
            gone = tombs.get(key)
            if theirs.dead:
                continue
            if gone is not None and gone >= theirs.version:
                plan.publish.append(_tombstone(ws, key, gone))
            elif gone is None or not again:
                plan.take(theirs)
                plan.taken.append((key, _sha(theirs)))
        elif theirs is None:
            plan.publish.append(mine)
        elif mine.text != theirs.text:
            won = _winner(mine, theirs)
            if won is mine:
                plan.publish.append(mine)
            elif not again:
                if theirs.dead:
                    plan.delete(mine)
                else:
                    plan.take(theirs)
                plan.taken.append((key, _sha(theirs)))
    # A link is taken only between memories this store holds once the plan is applied: one
    # deleted here (its tombstone goes out) takes its links with it on the other side too.
    alive = {i.line.id for k, i in local.items() if isinstance(i.line, MemoryLine)}
    alive = (alive - set(plan.forget)) | {m.id for m in plan.memories}
    for key in (k for k in keys if k.startswith("link:")):
        mine, theirs = local.get(key), view.get(key)
        if mine is not None and theirs is not None and mine.text == theirs.text:
            continue
        if theirs is None or (mine is not None and _winner(mine, theirs) is mine):
            assert mine is not None
            plan.publish.append(mine)
        elif isinstance(theirs.line, LinkLine) and {theirs.line.old, theirs.line.new} <= alive:
            plan.links.append(theirs.line)
    plan.links, plan.cyclic = _without_cycles(local, plan.links)
    return plan


def _without_cycles(local: dict[str, Item], links: list[LinkLine]) -> tuple[list[LinkLine], int]:
    """The links to take, oldest first, without those that would close a chain of
    supersedes into a cycle (every memory on one has a successor: none would be shown
    again), and how many were left out."""
    after = {
        i.line.old: i.line.new
        for k, i in local.items()
        if k.startswith("link:") and isinstance(i.line, LinkLine)
    }
    kept: list[LinkLine] = []
    for link in sorted(links, key=lambda ln: (ln.at, ln.old)):
        here, seen = link.new, {link.new}
        while here in after and here != link.old:
            here = after[here]
            if here in seen:
                break  # a cycle already there, not through this link
            seen.add(here)
        if here == link.old:
            continue
        after[link.old] = link.new
        kept.append(link)
    return kept, len(links) - len(kept)


def _apply(writes: Writes, plan: _Plan) -> None:
    """Write what the plan takes: memories and sources (embedded), facts, then the deletes
    and the links in one write. Each write is whole; a sync killed between two is finished
    by the next, which finds what the first wrote already here."""
    ws = plan.ws

    def write(batch: WriteBatch) -> None:
        writes.write(ws, batch)
        failpoint("sync.write")  # a test kills the sync here, between two writes

    records: list[Record] = [memory_record(m) for m in plan.memories]
    for start in range(0, len(records), BATCH_RECORDS):
        write(WriteBatch(upserts=tuple(records[start : start + BATCH_RECORDS])))
    batch: list[Record] = []
    entries: list[SourceEntry] = []
    for line in plan.sources:
        entry, chunks = source_records(line)
        entry = entry.model_copy(update={"root": plan.roots.get((entry.project, entry.source), "")})
        batch.extend(chunks)  # a source's chunks and its entry: one write
        entries.append(entry)
        if len(batch) >= BATCH_RECORDS or line is plan.sources[-1]:
            write(WriteBatch(upserts=tuple(batch), set_sources=tuple(entries)))
            batch, entries = [], []
    facts = tuple(Fact(**f.model_dump(exclude={"line", "workspace"})) for f in plan.facts)
    if facts:
        write(WriteBatch(add_facts=facts))
    links = tuple(
        SupersedeLink(old=MemoryId(ln.old), new=MemoryId(ln.new), at=ln.at) for ln in plan.links
    )
    if plan.forget or plan.drop or links or plan.taken:
        forget = tuple(MemoryId(i) for i in plan.forget)
        write(
            WriteBatch(
                delete_ids=forget,
                drop_sources=tuple(plan.drop),
                supersede=links,
                sync_taken=tuple(plan.taken),
            )
        )


_WORDS = {
    "memory": ("memory", "memories"),
    "source": ("source", "sources"),
    "fact": ("fact", "facts"),
    "link": ("supersede link", "supersede links"),
    "tombstone": ("tombstone", "tombstones"),
    "deleted": ("deletion", "deletions"),
}


def _tally(counts: Counter[str]) -> str:
    parts = [f"{n} {_WORDS[k][n != 1]}" for k, n in counts.items() if n]
    return ", ".join(parts) or "nothing"


def sync_folder(writes: Writes, folder: Path, workspace: str = "", all_: bool = False) -> str:
    """Sync one workspace (empty: the active one), or every one, through `folder`; the line
    saying what was written there and what was taken from it."""
    folder = folder.expanduser().resolve()
    if not folder.is_dir():
        raise InputError(
            f"DIR: {str(folder)!r} is not a folder; give the folder a sync tool or git "
            "repository shares (make it first)"
        )
    if all_ and workspace:
        raise InputError("--all, --workspace: give one of them")
    runtime = writes.runtime
    me = runtime.namespace()
    shared: Shared = read_folder(folder, me)
    if all_:
        names = sorted(set(list_workspaces(runtime.data_dir)) | set(shared.items)) or [""]
        targets = [writes.open(n, create=True) for n in names]
    else:
        # A workspace only the folder has yet is made here; one neither has is a typo.
        named = runtime.resolve(workspace, create=workspace in shared.items)
        targets = [writes.open(named, create=True)]
    plans = [_plan(runtime.data_dir, ws, shared.items.get(ws, [])) for ws in targets]
    taken: Counter[str] = Counter()
    refused = Counter(shared.refused)
    refused[OTHER_KIND] += sum(plan.refused for plan in plans)
    refused[CYCLE] += sum(plan.cyclic for plan in plans)
    refused = +refused  # none left at zero
    for plan in plans:
        _apply(writes, plan)
        taken.update(memory=len(plan.memories), source=len(plan.sources), fact=len(plan.facts))
        taken.update(link=len(plan.links), deleted=len(plan.forget) + len(plan.drop))
    out = [item for plan in plans for item in plan.publish]
    sent = Counter(str(item.line.line) for item in out)
    if out:
        path = write_file(folder, me, shared.own_last + 1, out)
        wrote = f"wrote {path.relative_to(folder)} ({_tally(sent)})"
    else:
        wrote = "wrote nothing (nothing new here)"
    others = f"{shared.machines} other machine{'s' if shared.machines != 1 else ''}"
    gone = f"; {refused_words(refused)}" if refused else ""
    return (
        f"sync {', '.join(targets)} through {folder} as machine {me}: {wrote}; read "
        f"{shared.files} file{'s' if shared.files != 1 else ''} ({others}): took "
        f"{_tally(taken)}{gone}"
    )
