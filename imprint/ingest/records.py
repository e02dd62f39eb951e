"""Building a file's records: chunked and tagged (`build_records`), and what an ingest
asks of each file before it reads it: which of a listing to read (`candidates`) and, in a
git work tree, what its registry entry records of the commit (`git_validators`,
`at_commit`). Nothing here writes: `imprint.writes.files` runs an ingest with these.
"""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Sequence
from pathlib import Path

from imprint.ingest.chunking import chunk_file
from imprint.ingest.files import within
from imprint.ingest.git import GitListing, blob_sha
from imprint.ingest.tags import file_kind, lang_of, rule_tags, supported
from imprint.store.context import chunk_contexts
from imprint.store.records import Record, SourceEntry, SourceType, content_sha, make_id

__all__ = ["at_commit", "build_records", "candidates", "git_validators"]


def build_records(
    project: str,
    source: str,
    text: str,
    *,
    source_type: SourceType = "file",
    lang: str = "",
    mtime: float = 0.0,
    target: int = 1200,
    overlap: int = 150,
) -> list[Record]:
    """Chunk a text and tag each chunk; ids are stable for the same place and content."""
    lang = lang or lang_of(source)
    chunks = chunk_file(text, lang, source, file_kind(lang), target, overlap)
    pieces = [c.text for c in chunks]
    contexts = chunk_contexts(source, pieces, lang, [c.symbol for c in chunks])
    now = time.time()
    records = []
    for index, (chunk, context) in enumerate(zip(chunks, contexts, strict=True)):
        piece = chunk.text
        tags = rule_tags(source, piece)
        sha = content_sha(piece)
        records.append(
            Record(
                id=make_id(source_type, project, source, index, sha),
                content=piece,
                project=project,
                source=source,
                source_type=source_type,
                chunk_index=index,
                chunk_count=len(pieces),
                type=str(tags["type"]),
                lang=lang,
                layer=str(tags["layer"]),
                kind=str(tags["kind"]),
                topics=tuple(tags["topics"]),  # type: ignore[arg-type]
                created_at=now,
                source_mtime=mtime,
                content_sha=sha,
                context=context,
                symbol=chunk.symbol,
                line_start=chunk.line_start,
                line_end=chunk.line_end,
                head=chunk.head,
            )
        )
    return records


def candidates(
    root: Path, files: list[str], roots: Sequence[Path]
) -> tuple[list[tuple[str, float | None]], int]:
    """Supported files to read, each with its mtime when it is a regular file (None for a
    link, judged again when read), and how many listed links lead outside `roots` (git lists
    a link to a folder as one entry, so it is judged here, where its target is known). One
    lstat per file: a rescan with nothing changed costs little more than the listing."""
    found: list[tuple[str, float | None]] = []
    outside = 0
    base = str(root)
    for rel in files:
        try:
            info = os.lstat(os.path.join(base, rel))
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode):
            if supported(rel):
                found.append((rel, info.st_mtime))
            continue
        if not stat.S_ISLNK(info.st_mode):
            continue
        file = root / rel
        try:
            if not within(file.resolve(strict=True), roots):
                outside += 1
                continue
        except (OSError, RuntimeError):  # dangling, or a loop
            continue
        if supported(rel) and file.is_file():
            found.append((rel, None))
    return found, outside


def git_validators(git: GitListing | None, rel: str, text: str) -> str:
    """What the registry records of a file in a work tree: the commit checked out, the blob
    that commit holds for the file ("" when untracked) and the blob of the text indexed."""
    if git is None:
        return ""
    blob = blob_sha(text.encode("utf-8"))
    return json.dumps({"commit": git.commit, "commit_blob": git.blobs.get(rel, ""), "blob": blob})


def at_commit(entry: SourceEntry, git: GitListing, rel: str) -> SourceEntry | None:
    """An unchanged file's entry moved to the commit now checked out (its text is what was
    indexed, so only the record of the commit changes); None when it is already there."""
    blob = git.blobs.get(rel, "")
    if f'"commit": "{git.commit}", "commit_blob": "{blob}"' in entry.validators:
        return None  # as `git_validators` wrote it, at this commit: no parse needed
    try:
        held = json.loads(entry.validators) if entry.validators else {}
    except ValueError:
        held = {}
    if not isinstance(held, dict) or "blob" not in held:
        return None  # indexed before git was asked: its blob is not known without a read
    if held.get("commit") == git.commit and held.get("commit_blob") == git.blobs.get(rel, ""):
        return None
    update = {**held, "commit": git.commit, "commit_blob": git.blobs.get(rel, "")}
    return entry.model_copy(update={"validators": json.dumps(update)})
