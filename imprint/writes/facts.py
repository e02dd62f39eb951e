"""Facts: add a temporal fact, or end one that no longer holds."""

from __future__ import annotations

import time

from imprint.actors.deadline import Deadline
from imprint.actors.read_messages import FactById, FactQuery
from imprint.errors import InputError
from imprint.store.records import Fact, WriteBatch, make_id
from imprint.writes._redaction import redaction_note
from imprint.writes.gateway import Writes

__all__ = ["edit_facts", "fact_part"]


def fact_part(value: str, argument: str) -> str:
    text = " ".join(value.split()) if isinstance(value, str) else ""
    if not text or len(text) > 300:
        raise InputError(f"{argument}: must be 1-300 characters")
    return text


def edit_facts(
    writes: Writes,
    action: str,
    subject: str = "",
    predicate: str = "",
    object: str = "",
    fact_id: str = "",
    source: str = "",
    workspace: str = "",
) -> str:
    """Add a fact (subject, predicate, object) unless it already holds, or end one by id."""
    if action not in ("add", "end"):
        raise InputError(f"action: {action!r} is not allowed; one of add, end")
    ws = writes.open(workspace, create=action == "add")
    deadline = Deadline(60.0)
    if action == "add":
        s, p, o = (
            fact_part(subject, "subject"),
            fact_part(predicate, "predicate"),
            fact_part(object, "object"),
        )
        current = deadline.wait(
            writes.reads.ask(FactQuery(workspace=ws, subject=s, predicate=p, limit=200)),
            "kg_edit",
        )
        for fact in current:
            if fact.object.lower() == o.lower():
                return f"unchanged: fact:{fact.id} already holds"
        now = time.time()
        fact = Fact(
            id=make_id("fact", s.lower(), p.lower(), o.lower(), now)[:12],
            subject=s,
            predicate=p,
            object=o,
            valid_from=now,
            source=source.strip()[:300],
        )
        ack = writes.write(ws, WriteBatch(add_facts=(fact,)))
        if ack.redacted:  # the fact as stored, not the secret the caller sent
            return f"added fact:{fact.id}{redaction_note(ack.redacted)}"
        return f"added fact:{fact.id} ({s} | {p} | {o})"
    fid = fact_id.removeprefix("fact:").strip() if isinstance(fact_id, str) else ""
    if not fid:
        raise InputError("fact_id: required to end a fact; kg_query shows fact ids")
    found = deadline.wait(writes.reads.ask(FactById(workspace=ws, fact_id=fid)), "kg_edit")
    if found is None:
        raise InputError(f"fact_id: no fact {fid!r} in workspace {ws!r}")
    fact = found
    if fact.ended is not None:
        raise InputError(f"fact_id: fact:{fid} has already ended")
    writes.write(ws, WriteBatch(end_facts=((fid, time.time()),)))
    return f"ended fact:{fid} ({fact.subject} | {fact.predicate} | {fact.object})"
