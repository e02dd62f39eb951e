"""Observations kept as memories: each once per project, and a newer one on the same subject
superseding the older (`imprint.capture.observe` finds them).

An observation equal to a memory already there (the same id, the same `records.text_key`,
or one of the same type at least NEAR_SAME similar) is not written again: the existing
observation gains the session in its context instead. A decision, preference or fact that
says what it replaces ("Dramatiq instead of Celery", "moved from pg-staging-1") supersedes the
older memory of the same project and type that names the replaced thing and is close enough
in meaning (REPLACED_MIN); a fact whose subject words match an older fact's supersedes it
when they are SAME_SUBJECT_MIN similar. Precision comes first: a wrong supersede hides a true
memory, so every rule needs both a named thing and the embedder's agreement. The link is the
store's supersede link: hidden by default, shown by `get_memory`, undone by `store(restore=)`
or `imprint memory restore ID`, never a delete.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from imprint._replaced import names
from imprint.actors.read_messages import FetchRecords, SameText, SupersedeLinks, VectorQuery
from imprint.capture.observe import (
    KIND,
    OPEN_KIND,
    RECORD_TYPE,
    Observation,
    content_words,
    replaced_terms,
    subject_words,
    values,
)
from imprint.reads.deadline import Deadline
from imprint.store.context import MAX_CONTEXT_CHARS
from imprint.store.records import (
    Filters,
    Record,
    SupersedeLink,
    content_sha,
    make_id,
    text_key,
)
from imprint.types import MemoryId, WorkspaceName
from imprint.writes.gateway import Writes

__all__ = ["NEAR_SAME", "REPLACED_MIN", "SAME_SUBJECT_MIN", "Kept", "keep_observations"]

NEAR_SAME = 0.93  # cosine similarity at which two observations of one type say the same
REPLACED_MIN = 0.30  # a newer item naming what it replaces, and the older naming it
SAME_SUBJECT_MIN = 0.55  # a newer fact whose subject words an older fact's match
LOOKED_AT = 12
_SUPERSEDING = ("decision", "preference", "fact")


@dataclass
class Kept:
    records: list[Record]
    links: list[SupersedeLink]


@dataclass(frozen=True)
class Placed:
    """An observation and where it was said: the session, its turn's first chunk index."""

    observation: Observation
    session: str
    chunk: int
    turn: int


def _replaces(new: Observation, old_text: str, old_kind: str) -> bool:
    """Whether `new` says it replaces what `old_text` states (not what it, too, rejects)."""
    rejected = set(replaced_terms(old_text))
    return any(term not in rejected and names(term, old_text) for term in new.replaces)


def _same_values(a: str, b: str) -> bool:
    return values(a) == values(b) and re.findall(r"\d+", a) == re.findall(r"\d+", b)


def _restated(new: Observation, old: Observation) -> bool:
    """One turn saying the same thing twice (the user's words, then the assistant's): they
    replace the same thing, or share most of their words."""
    if set(new.replaces) & set(old.replaces):
        return True
    mine, theirs = content_words(new.text), content_words(old.text)
    return bool(mine and theirs) and len(mine & theirs) >= 0.6 * min(len(mine), len(theirs))


def _stems(words: tuple[str, ...]) -> set[str]:
    return {w[:-1] if w.endswith("s") and len(w) > 3 else w for w in words}


def _same_subject(new: Observation, old_text: str) -> bool:
    """Two facts about one thing: their subjects share two words, or the values they name
    share two parts (`pg-staging-1` and `pg-staging-3`) and differ."""
    if new.kind != "fact":
        return False
    mine, theirs = _stems(subject_words(new.text)), _stems(subject_words(old_text))
    if len(mine) >= 2 and len(mine & theirs) >= 2:
        return True
    held, named = values(new.text), values(old_text)
    return len(held & named) >= 2 and held != named


def keep_observations(
    writes: Writes, ws: WorkspaceName, project: str, placed: list[Placed], deadline: Deadline
) -> Kept:
    """The records to write for `placed` (in the order said) and the links they add."""
    records: list[Record] = []
    links: list[SupersedeLink] = []
    taken: dict[str, Record] = {}  # this batch's, by text key
    said: dict[tuple[str, int, str], list[Observation]] = {}  # by session, turn and kind
    turn_records: list[tuple[tuple[str, int], Record]] = []  # each kept with its turn
    for item in placed:
        obs = item.observation
        kind = RECORD_TYPE[obs.kind]
        key = text_key(obs.text)
        here = said.setdefault((item.session, item.turn, obs.kind), [])
        if key in taken or any(_restated(obs, other) for other in here):
            continue
        here.append(obs)
        same_turn = {
            r.id for o, r in turn_records if o is not None and o == (item.session, item.turn)
        }
        rid = make_id("memory", project, content_sha(obs.text))
        context = f"session:{item.session}#{item.chunk} turn {item.turn}"
        if obs.files:
            context += " | files " + " ".join(obs.files)
        context = context[:MAX_CONTEXT_CHARS]  # embedded before the text: never its place
        found = deadline.wait(writes.reads.ask(FetchRecords(workspace=ws, ids=(rid,))), "capture")
        same = rid if rid in found else None
        if same is None:
            same = deadline.wait(
                writes.reads.ask(SameText(workspace=ws, project=project, key=key)), "capture"
            )
        filters = Filters(project=project, type=kind)
        hits = deadline.wait(
            writes.reads.ask(
                VectorQuery(workspace=ws, text=obs.text, limit=LOOKED_AT, filters=filters)
            ),
            "capture",
        )
        near = dict(hits)
        fetched = deadline.wait(
            writes.reads.ask(FetchRecords(workspace=ws, ids=tuple(near))), "capture"
        )
        older = {
            rid_: r
            for rid_, r in fetched.items()
            if r.source_type == "memory" and r.project == project and r.kind != OPEN_KIND
        }
        if same is None and not obs.replaces:
            # MiniLM finds a reversal as close as a paraphrase (README, near_duplicate): a
            # near one is the same only when it names the same values and numbers.
            for other_id, sim in hits:
                if (
                    sim >= NEAR_SAME
                    and other_id in older
                    and _same_values(obs.text, older[other_id].content)
                ):
                    same = other_id
                    break
        if same is not None:
            existing = found.get(same) or fetched.get(same)
            if existing is None:
                existing = deadline.wait(
                    writes.reads.ask(FetchRecords(workspace=ws, ids=(same,))), "capture"
                ).get(same)
            # A repeat names its session while the context has room: the context is
            # embedded before the text, so a longer one (forty sessions) pushed the text out
            # of the embedder's window, and a search by its own words no longer found it.
            longer = f"{existing.context}; {context}" if existing is not None else ""
            if (
                existing is not None
                and existing.kind == KIND
                and f"session:{item.session}#" not in existing.context
                and len(longer) <= MAX_CONTEXT_CHARS
            ):
                records.append(existing.model_copy(update={"context": longer}))
            continue
        record = Record(
            id=rid,
            content=obs.text,
            project=project,
            source=f"session:{item.session}#{item.chunk}",
            source_type="memory",
            chunk_index=0,
            type=kind,
            kind=OPEN_KIND if obs.kind == "open" else KIND,
            created_at=obs.at,
            context=context,
            content_sha=content_sha(obs.text),
        )
        if obs.kind in _SUPERSEDING:
            # A turn never reverses itself: its own statements are not what it replaces.
            earlier = [r for r in taken.values() if r.id not in same_turn]
            links.extend(_supersedes(writes, ws, record, obs, near, older, earlier, deadline))
        taken[key] = record
        turn_records.append(((item.session, item.turn), record))
        records.append(record)
    return Kept(records=records, links=links)


def _supersedes(
    writes: Writes,
    ws: WorkspaceName,
    record: Record,
    obs: Observation,
    near: dict[MemoryId, float],
    older: dict[MemoryId, Record],
    earlier: list[Record],
    deadline: Deadline,
) -> list[SupersedeLink]:
    """The links by which `record` supersedes older memories of its project and type."""
    if not obs.replaces and obs.kind != "fact":
        return []
    chosen: list[MemoryId] = []
    for other_id, old in older.items():
        if old.created_at > obs.at or old.type != record.type:
            continue
        sim = near.get(other_id, 0.0)
        old_kind = _observation_kind(old)
        if (_replaces(obs, old.content, old_kind) and sim >= REPLACED_MIN) or (
            _same_subject(obs, old.content) and sim >= SAME_SUBJECT_MIN
        ):
            chosen.append(other_id)
    if chosen:  # a memory has one successor: the first to replace it keeps it
        links = deadline.wait(
            writes.reads.ask(SupersedeLinks(workspace=ws, ids=tuple(chosen))), "capture"
        )
        hidden = {link.old for link in links}
        chosen = [c for c in chosen if c not in hidden]
    for old in earlier:  # said before it in this same capture: not in the store yet
        fits = old.type == record.type and old.created_at <= obs.at and old.id not in chosen
        if fits and _replaces(obs, old.content, _observation_kind(old)):
            chosen.append(old.id)
    return [SupersedeLink(old=c, new=record.id, at=obs.at) for c in chosen]


def _observation_kind(record: Record) -> str:
    for kind, rtype in RECORD_TYPE.items():
        if rtype == record.type and kind != "open":
            return kind
    return record.type
