"""What re-indexing one source writes when its store's text format is older than this
version's (`imprint.store.context.TEXT_FORMAT`).

Every source gets the context line this version indexes. A code file in a language chunked
by its structure (format 3; format 4: a later piece of a split definition carries its
signature; format 6: that signature with its decorators) is chunked again from the file
itself when the file is still what was ingested (its sha256 is the registry's) and this
version chunks it differently: new chunks with symbols, lines and signatures replace the
old ones, each keeping its own tags where it was there already, else those of the old chunk
at its place. A file that is gone or changed keeps its old chunks, with the new context
line, until ingest sees it again. Code chunks a store before format 5 embedded with their
symbol words are written (embedded) again.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from imprint._fs import read_utf8
from imprint.chunking import chunk_file, structured
from imprint.store.context import chunk_contexts
from imprint.store.records import Record, SourceEntry, WriteBatch, content_sha, make_id
from imprint.store.sqlite_read import SqliteReader

__all__ = ["Rechunk", "reindexed"]


class Rechunk(BaseModel):
    """The chunk sizes and file limit ingest uses (`ingest.*` in the config)."""

    model_config = ConfigDict(frozen=True)

    target: int = 1200
    overlap: int = 150
    max_file_bytes: int = 1_048_576


def _file_text(entry: SourceEntry, limit: int) -> str | None:
    """The file's text as ingest reads it, or None (gone, not a plain file, too big, binary,
    not UTF-8)."""
    return read_utf8(Path(entry.root) / entry.source, limit) if entry.root else None


def _rechunked(
    sqlite: SqliteReader, records: list[Record], sizes: Rechunk
) -> tuple[list[Record], SourceEntry] | None:
    first = records[0]
    entry = sqlite.source_entry(first.project, first.source)
    if entry is None or entry.source_type != "file":
        return None
    text = _file_text(entry, sizes.max_file_bytes)
    if text is None or content_sha(text) != entry.sha:
        return None
    chunks = chunk_file(text, first.lang, first.source, "code", sizes.target, sizes.overlap)
    if not chunks:
        return None
    contexts = chunk_contexts(
        first.source, [c.text for c in chunks], first.lang, [c.symbol for c in chunks]
    )
    by_id = {r.id: r for r in records}
    out = []
    for index, (chunk, context) in enumerate(zip(chunks, contexts, strict=True)):
        sha = content_sha(chunk.text)
        rid = make_id(first.source_type, first.project, first.source, index, sha)
        # A chunk that was there keeps its own tags and date; a new one takes those of the
        # old chunk at its place.
        was = by_id.get(rid) or records[min(index, len(records) - 1)]
        out.append(
            was.model_copy(
                update={
                    "id": rid,
                    "content": chunk.text,
                    "chunk_index": index,
                    "chunk_count": len(chunks),
                    "content_sha": sha,
                    "context": context,
                    "symbol": chunk.symbol,
                    "line_start": chunk.line_start,
                    "line_end": chunk.line_end,
                    "head": chunk.head,
                }
            )
        )
    return out, entry.model_copy(update={"chunk_count": len(out)})


def _chunks(records: list[Record]) -> list[tuple[str, str, int, int, str]]:
    """What the chunker decides of a file's chunks (a version that chunks the same writes
    nothing for it)."""
    return [(r.content, r.symbol, r.line_start, r.line_end, r.head) for r in records]


# The text format since which a code chunk is embedded without its symbol words: the code
# chunks of an older store are written (embedded) again.
EMBEDDED_WITHOUT_WORDS = 5


def reindexed(sqlite: SqliteReader, project: str, source: str, sizes: Rechunk) -> WriteBatch:
    """The write that brings one source to this version's index (empty: nothing to do)."""
    records = sqlite.source_records(project, source)
    if not records:
        return WriteBatch()
    first = records[0]
    if first.source_type == "file" and structured(first.lang):
        found = _rechunked(sqlite, records, sizes)
        # Chunks with symbols are never replaced by chunks without (a grammar that failed
        # to load falls back to the line chunker, and its chunks would undo the parse).
        lost = found is not None and not any(r.symbol for r in found[0])
        if lost and any(r.symbol for r in records):
            found = None
        if found is not None and _chunks(found[0]) != _chunks(records):
            fresh, entry = found
            return WriteBatch(upserts=tuple(fresh), set_sources=(entry,))
    contexts = chunk_contexts(
        source, [r.content for r in records], first.lang, [r.symbol for r in records]
    )
    stale = sqlite.text_format() < EMBEDDED_WITHOUT_WORDS
    changed = [
        r.model_copy(update={"context": c})
        for r, c in zip(records, contexts, strict=True)
        if r.context != c or (stale and r.symbol)
    ]
    return WriteBatch(upserts=tuple(changed))
