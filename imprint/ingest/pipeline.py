"""Ingest a file or folder: select (`imprint.ingest.files`), skip what is unchanged,
chunk, tag, embed, write.

Embedding runs in the caller's thread while the writer actor applies the previous file, so
the two overlap. A file's source is its path relative to the folder given. Inside a git
work tree each file's registry entry records the commit it was indexed at (its
`validators`: the commit, the blob the commit holds for it, the blob indexed).

Nothing outside the allowed roots is read: every file read is resolved first (symlinks,
`..`, loops), and one whose real path leaves the roots is counted and skipped.
"""

from __future__ import annotations

import itertools
import json
import os
import stat
import threading
import time
from collections.abc import Callable, MutableMapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from imprint._faults import delay
from imprint._fs import read_utf8
from imprint._shown import shown
from imprint.actors.deadline import Deadline, Pending
from imprint.actors.lifecycle import Runtime
from imprint.actors.writer import WriteAck
from imprint.ingest.chunking import chunk_file
from imprint.ingest.files import select_files, walk, within
from imprint.ingest.git import GitListing, blob_sha
from imprint.ingest.tags import file_kind, lang_of, rule_tags, supported
from imprint.logs import get_logger
from imprint.store.context import chunk_contexts
from imprint.store.records import (
    Record,
    SourceEntry,
    SourceType,
    WriteBatch,
    check_project,
    content_sha,
    make_id,
    project_from_folder,
)
from imprint.tagging import model_tags
from imprint.writes.gateway import Writes

__all__ = [
    "IngestReport",
    "Progress",
    "build_records",
    "ingest_path",
    "running_ingests",
    "walk",
    "within",
]

log = get_logger("imprint.ingest")

Progress = Callable[[int, int, str], None]
WRITE_TIMEOUT_SEC = 300.0
# A summary names at most this many of the files that failed, then counts the rest.
FAILED_NAMED = 5


class IngestReport(BaseModel):
    root: str
    project: str
    files: int = 0
    chunks: int = 0
    unchanged: int = 0
    skipped: int = 0
    removed: int = 0
    outside: int = 0
    failed: list[str] = []  # files whose chunking failed: each skipped, the rest went on
    seconds: float = 0.0

    @property
    def chunks_per_sec(self) -> float:
        return self.chunks / self.seconds if self.seconds > 0 else 0.0

    def summary(self) -> str:
        failed = ""
        if self.failed:
            names = ", ".join(shown(name) for name in self.failed[:FAILED_NAMED])
            more = len(self.failed) - FAILED_NAMED
            names += f" and {more} more" if more > 0 else ""
            failed = f"{len(self.failed)} failed ({names}), "
        return (
            f"ingested {self.files} files ({self.chunks} chunks) into project {self.project!r}; "
            f"{self.unchanged} unchanged, {self.skipped} skipped, {failed}{self.removed} removed, "
            f"{self.outside} outside the allowed roots; "
            f"{self.seconds:.1f} s, {self.chunks_per_sec:.1f} chunks/s"
        )


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


def _candidates(
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


def _git_validators(git: GitListing | None, rel: str, text: str) -> str:
    """What the registry records of a file in a work tree: the commit checked out, the blob
    that commit holds for the file ("" when untracked) and the blob of the text indexed."""
    if git is None:
        return ""
    blob = blob_sha(text.encode("utf-8"))
    return json.dumps({"commit": git.commit, "commit_blob": git.blobs.get(rel, ""), "blob": blob})


def _at_commit(entry: SourceEntry, git: GitListing, rel: str) -> SourceEntry | None:
    """An unchanged file's entry moved to the commit now checked out (its text is what was
    indexed, so only the record of the commit changes); None when it is already there."""
    blob = git.blobs.get(rel, "")
    if f'"commit": "{git.commit}", "commit_blob": "{blob}"' in entry.validators:
        return None  # as `_git_validators` wrote it, at this commit: no parse needed
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


def _joined(group: Sequence[tuple[WriteBatch, np.ndarray | None]]) -> tuple[WriteBatch, Any]:
    """Several files' batches as one write (each file's records and entry stay together:
    the writer applies a batch whole or, after a crash, replays it whole)."""
    vectors = [e for b, e in group if b.upserts and e is not None]
    batch = WriteBatch(
        upserts=tuple(r for b, _ in group for r in b.upserts),
        set_sources=tuple(e for b, _ in group for e in b.set_sources),
        drop_sources=tuple(d for b, _ in group for d in b.drop_sources),
    )
    return batch, (np.concatenate(vectors) if vectors else None)


_RUNNING: dict[int, dict[str, Any]] = {}
_RUNNING_LOCK = threading.Lock()
_RUNNING_IDS = itertools.count(1)


def running_ingests(data_dir: Path) -> list[dict[str, Any]]:
    """Ingests in progress in this process for one data dir: path, files done and total."""
    with _RUNNING_LOCK:
        return [dict(v) for v in _RUNNING.values() if v["data_dir"] == str(data_dir)]


def ingest_path(
    runtime: Runtime,
    path: Path,
    *,
    project: str = "",
    workspace: str = "",
    progress: Progress | None = None,
    roots: Sequence[Path] | None = None,
    group_chunks: int = 0,
    failures: MutableMapping[str, float] | None = None,
    pace: Callable[[], object] | None = None,
) -> IngestReport:
    """Ingest `path`; nothing whose real path is outside `roots` (default: the path
    itself) is read. While it runs, `running_ingests` shows its progress. With
    `group_chunks`, files are written together in batches of about that many chunks (a
    watcher's burst of changes: a few writes, not one per file); without, one per file.

    A file whose chunking fails is skipped alone and named in `failed`. `failures` (a
    watcher's, kept across its batches) holds each such file's mtime: the file is not read
    again until it changes, since the same text fails the same way.

    `pace` is called before each inference of the embedder (a background ingest yields
    there to interactive calls)."""
    key = next(_RUNNING_IDS)
    entry: dict[str, Any] = {
        "data_dir": str(runtime.data_dir),
        "path": str(path),
        "done": 0,
        "total": 0,
        "current": "",
        "started": time.time(),
    }

    def shown(done: int, total: int, source: str) -> None:
        with _RUNNING_LOCK:
            entry.update(done=done, total=total, current=source)
        if progress:
            progress(done, total, source)

    with _RUNNING_LOCK:
        _RUNNING[key] = entry
    try:
        return _ingest_path(
            runtime,
            path,
            project=project,
            workspace=workspace,
            progress=shown,
            roots=roots,
            group_chunks=group_chunks,
            failures={} if failures is None else failures,
            pace=pace,
        )
    finally:
        with _RUNNING_LOCK:
            _RUNNING.pop(key, None)


def _embedded(runtime: Runtime, texts: list[str], pace: Callable[[], object] | None) -> np.ndarray:
    if pace is None:
        return runtime.embedder().embed(texts)
    return runtime.embedder().embed(texts, between=pace)


def _ingest_path(
    runtime: Runtime,
    path: Path,
    *,
    project: str,
    workspace: str,
    progress: Progress,
    roots: Sequence[Path] | None,
    group_chunks: int = 0,
    failures: MutableMapping[str, float],
    pace: Callable[[], object] | None = None,
) -> IngestReport:
    started = time.monotonic()
    path = path.expanduser()
    allowed = [Path(r).expanduser().resolve() for r in roots] if roots else [path.resolve()]
    chosen = select_files(path, allowed)
    root, files, git = chosen.root.resolve(), list(chosen.files), chosen.git
    project = check_project(project) if project else project_from_folder(root.name)
    writes = Writes(runtime)
    ws = writes.open(workspace, create=True)
    cfg = runtime.config.ingest
    deadline = Deadline(WRITE_TIMEOUT_SEC)
    known = deadline.wait(writes.source_state(ws, project), "ingest")
    report = IngestReport(root=str(root), project=project, outside=chosen.outside)
    candidates, outside_links = _candidates(root, files, allowed)
    report.outside += outside_links
    report.skipped = len(files) - len(candidates) - outside_links
    max_chunks = cfg.max_chunks_per_source
    seen: set[str] = set()
    moved: list[SourceEntry] = []  # unchanged files whose recorded commit is not HEAD's
    in_flight: Pending[WriteAck] | None = None

    group: list[tuple[WriteBatch, np.ndarray | None]] = []
    grouped = [0]  # chunks in `group`

    def send(batch: WriteBatch, embeddings: np.ndarray | None = None) -> None:
        nonlocal in_flight
        if in_flight is not None:
            Deadline(WRITE_TIMEOUT_SEC).wait(in_flight, "ingest write")
        in_flight = writes.send(ws, batch, embeddings)

    def flush() -> None:
        """Embed the group's files in one call (as fast as the embedder goes), then write
        them as one batch; a file deleted meanwhile is written as dropped instead."""
        if not group:
            return
        texts = [r.indexed_text for b, _ in group for r in b.upserts]
        vectors = _embedded(runtime, texts, pace) if texts else None
        delay("ingest.file.embedded")
        kept: list[tuple[WriteBatch, np.ndarray | None]] = []
        at = 0
        for batch, _ in group:
            size = len(batch.upserts)
            part = vectors[at : at + size] if vectors is not None and size else None
            at += size
            if not size or os.path.lexists(root / batch.upserts[0].source):
                kept.append((batch, part))
                continue
            source = batch.upserts[0].source
            seen.discard(source)
            report.files, report.chunks = report.files - 1, report.chunks - size
            report.skipped += 1
            kept.append((WriteBatch(drop_sources=((project, source),)), None))
        send(*_joined(kept))
        group.clear()
        grouped[0] = 0

    def submit(batch: WriteBatch, embeddings: np.ndarray | None = None) -> None:
        if group_chunks <= 0:
            send(batch, embeddings)
            return
        group.append((batch, embeddings))
        grouped[0] += len(batch.upserts)
        if grouped[0] >= group_chunks:
            flush()

    for done, (rel, listed_mtime) in enumerate(candidates, start=1):
        progress(done, len(candidates), rel)
        entry = known.get(rel)
        if (
            entry is not None
            and listed_mtime is not None
            and entry.mtime == listed_mtime
            and entry.root == str(root)
        ):
            # Unchanged, and not read: nothing here needs its real path.
            seen.add(rel)
            report.unchanged += 1
            if git is not None and (again := _at_commit(entry, git, rel)) is not None:
                moved.append(again)
            continue
        try:
            # Resolved at the moment of reading: a link made or changed after the listing
            # is judged by where it points now.
            file = (root / rel).resolve(strict=True)
        except (OSError, RuntimeError):  # gone, or a symlink loop
            report.skipped += 1
            continue
        if not within(file, allowed):
            log.warning("ingest.outside_roots", source=rel)
            report.outside += 1
            continue
        try:
            mtime = file.stat().st_mtime
        except OSError:
            report.skipped += 1
            continue
        if entry is not None and entry.mtime == mtime and entry.root == str(root):
            seen.add(rel)
            report.unchanged += 1
            if git is not None and (again := _at_commit(entry, git, rel)) is not None:
                moved.append(again)
            continue
        if failures.get(rel) == mtime:
            # Failed at this mtime before: the same text fails again. What an earlier text
            # of it indexed stays (seen), as it does for a file that failed just now.
            seen.add(rel)
            report.failed.append(rel)
            continue
        text = read_utf8(file, cfg.max_file_bytes)
        if text is None or not text.strip():
            report.skipped += 1
            continue
        seen.add(rel)
        sha = content_sha(text)
        validators = _git_validators(git, rel, text)
        if entry is not None and entry.sha == sha:
            # Touched but not changed: only the registry's mtime (and commit) move.
            update = {"mtime": mtime, "validators": validators}
            submit(WriteBatch(set_sources=(entry.model_copy(update=update),)))
            report.unchanged += 1
            continue
        try:
            records = build_records(
                project, rel, text, mtime=mtime, target=cfg.chunk_chars, overlap=cfg.chunk_overlap
            )
        except Exception:  # a chunker's bug on this text: the folder's other files go on
            log.exception("ingest.file.failed", source=rel)
            report.failed.append(rel)
            failures[rel] = mtime
            continue
        failures.pop(rel, None)
        if len(records) > max_chunks:
            log.warning("ingest.too_many_chunks", source=rel, chunks=len(records), limit=max_chunks)
            report.skipped += 1
            continue
        tags = model_tags(runtime, text, rel)  # one request per file, when tagger.llm is on
        if tags is not None:
            records = [
                r.model_copy(
                    update={
                        "domains": tags.domains,
                        "topics": tags.topics or r.topics,
                        "type": tags.type,
                        "tagged_by": "model",
                    }
                )
                for r in records
            ]
        embeddings = None  # grouped: embedded with the rest of its group, in `flush`
        if group_chunks <= 0:
            embeddings = _embedded(runtime, [r.indexed_text for r in records], pace)
            delay("ingest.file.embedded")
            if not os.path.lexists(root / rel):
                # Deleted while it was read and embedded: write nothing of it (and, not
                # seen, its old records go with the folder's other gone files below).
                seen.discard(rel)
                report.skipped += 1
                continue
        source = SourceEntry(
            project=project,
            source=rel,
            source_type="file",
            mtime=mtime,
            sha=sha,
            chunk_count=len(records),
            root=str(root),
            validators=validators,
        )
        submit(WriteBatch(upserts=tuple(records), set_sources=(source,)), embeddings)
        report.files += 1
        report.chunks += len(records)

    if moved:  # one write for a commit that moved under unchanged files
        submit(WriteBatch(set_sources=tuple(moved)))
    if path.is_dir():
        gone = [s for s, e in known.items() if e.root == str(root) and s not in seen]
        if gone:
            submit(WriteBatch(drop_sources=tuple((project, s) for s in gone)))
            report.removed = len(gone)
    flush()
    if in_flight is not None:
        Deadline(WRITE_TIMEOUT_SEC).wait(in_flight, "ingest write")
    report.seconds = time.monotonic() - started
    return report
