"""What the writer's check and repair of a workspace's two indexes answer."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from imprint.store.context import TEXT_FORMAT

__all__ = ["IndexCheck", "RepairReport"]


class IndexCheck(BaseModel):
    """Counts of one workspace and whether its vector and lexical indexes agree."""

    model_config = ConfigDict(frozen=True)

    projects: dict[str, dict[str, int]]
    records: int
    vectors: int
    facts: int
    facts_current: int
    journal_pending: int
    journal_quarantined: int = 0
    only_in_vectors: int
    only_in_lexical: int
    fts_ok: bool
    findings: list[str] | None = None  # the deep check's, when it ran
    # Newest record's created_at per project (epoch seconds); for the dashboard.
    project_last_write: dict[str, float] = {}
    # The format the index was built with (`imprint.store.context`), and while an older one
    # is re-indexed in the background, sources done of how many.
    text_format: int = TEXT_FORMAT
    reindex: dict[str, int] = {}
    # The vectors were made by another embedder than the one configured (its identity
    # differs: `Writer.reembed_due`), and while they are made again, records done of how many.
    other_embedder: bool = False
    reembed: dict[str, int] = {}


class RepairReport(BaseModel):
    """What a repair found, what it did, and what the deep check still finds after it."""

    model_config = ConfigDict(frozen=True)

    found: list[str]
    done: list[str]
    left: list[str]
