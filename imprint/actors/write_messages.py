"""The writer actor's messages: writes, the index check, and what a source looks like now."""

from __future__ import annotations

from imprint.actors._trace import Message
from imprint.store.records import WriteBatch

__all__ = ["Backup", "Check", "MergeIndex", "Reindex", "Repair", "SourceState", "Write"]


class Write(Message):
    kind = "write"
    batch: WriteBatch


class Check(Message):
    """Compare the two indexes of the writer's workspace (deep: record by record, with
    content hashes, and one search of the vector index)."""

    kind = "check"
    deep: bool = False


class Repair(Message):
    """Rebuild whichever index disagrees from the other; what was found and done."""

    kind = "repair"


class SourceState(Message):
    kind = "source_state"
    project: str
    source_type: str = "file"


class Reindex(Message):
    """One step of re-indexing a workspace built with an older text format (see
    `imprint.store.context`); the writer sends itself the next one."""

    kind = "reindex"


class MergeIndex(Message):
    """One step of merging the BM25 index's segments (`SqliteReader.merge_index`); the
    writer sends itself these after writes, and the next one while a step did work."""

    kind = "merge_index"


class Backup(Message):
    """Copy the workspace's SQLite file and Chroma folder into `dest` (an empty folder);
    the writer holds every write back until the copy is done."""

    kind = "backup"
    dest: str
