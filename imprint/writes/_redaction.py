"""One redaction for every write: the gateway's `send` passes each batch through here, so
store, kg_edit, ingest (content, files, pages), import, sync and capture all redact the same
secrets (`imprint.redact`) before anything reaches the journal, the indexes or the vectors.

`redact.enabled` (true) turns it off everywhere, `redact.keep_secrets_in` for the workspaces
named (secrets stored on purpose). The counts go back in the write's acknowledgement, so an
answer can say how many were redacted and of which kinds.
"""

from __future__ import annotations

from collections import Counter

from imprint.config import Config
from imprint.redact import redact_counted
from imprint.store.records import Fact, Record, WriteBatch
from imprint.types import WorkspaceName

__all__ = ["redacted_batch", "redaction_note", "redacts"]


def redacts(config: Config, ws: WorkspaceName) -> bool:
    """Whether writes to `ws` are redacted."""
    return config.redact.enabled and ws not in config.redact.keep_secrets_in


def _record(record: Record, found: Counter[str]) -> Record:
    changes = {}
    # What is shown and what is indexed; ids and sources stay (they are names, not text).
    for name in ("content", "context", "head"):
        value = getattr(record, name)
        clean, kinds = redact_counted(value)
        if kinds:
            changes[name] = clean
            found.update(kinds)
    return record.model_copy(update=changes) if changes else record


def _fact(fact: Fact, found: Counter[str]) -> Fact:
    changes = {}
    for name in ("subject", "predicate", "object"):
        clean, kinds = redact_counted(getattr(fact, name))
        if kinds:
            changes[name] = clean
            found.update(kinds)
    return fact.model_copy(update=changes) if changes else fact


def redacted_batch(batch: WriteBatch) -> tuple[WriteBatch, Counter[str], list[int]]:
    """`batch` with its secrets redacted, the kinds found, and the indexes of the upserts
    that changed (their vectors, if given, were made from the secret and are made again)."""
    found: Counter[str] = Counter()
    upserts = []
    changed = []
    for i, record in enumerate(batch.upserts):
        clean = _record(record, found)
        if clean is not record:
            changed.append(i)
        upserts.append(clean)
    facts = tuple(_fact(f, found) for f in batch.add_facts)
    if not found:
        return batch, found, []
    return batch.model_copy(update={"upserts": tuple(upserts), "add_facts": facts}), found, changed


def redaction_note(redacted: tuple[tuple[str, int], ...]) -> str:
    """`; redacted 2 secrets (aws-key, github-token)` for an answer; empty when none were."""
    if not redacted:
        return ""
    total = sum(n for _, n in redacted)
    kinds = ", ".join(kind if n == 1 else f"{kind} x{n}" for kind, n in redacted)
    return f"; redacted {total} secret{'s' if total != 1 else ''} ({kinds})"
