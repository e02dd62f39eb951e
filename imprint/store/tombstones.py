"""Tombstones: what this store deleted, and when, so that a deletion can travel to another
machine (`imprint sync`) and an older copy of the record is never taken back in.

A tombstone is keyed by what was deleted: `memory:<id>`, `source:<project>|<source>` or
`fact:<id>`; the writer adds one in the same transaction as the delete and drops it when the
same key is written again (a memory stored anew, a source ingested again)."""

from __future__ import annotations

__all__ = ["fact_mark", "memory_mark", "source_mark"]


def memory_mark(memory_id: str) -> str:
    return f"memory:{memory_id}"


def source_mark(project: str, source: str) -> str:
    return f"source:{project}|{source}"


def fact_mark(fact_id: str) -> str:
    return f"fact:{fact_id}"
