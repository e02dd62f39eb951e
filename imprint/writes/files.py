"""Ingest a file or folder: select (`imprint.ingest.files`), skip what is unchanged,
chunk and tag (`imprint.ingest.records`), embed, write (`FileIngest`).

Embedding runs in the caller's thread while the writer actor applies the previous file, so
the two overlap. A file's source is its path relative to the folder given. Inside a git
work tree each file's registry entry records the commit it was indexed at (its
`validators`: the commit, the blob the commit holds for it, the blob indexed).

Nothing outside the allowed roots is read: every file read is resolved first (symlinks,
`..`, loops), and one whose real path leaves the roots is counted and skipped.
"""

from __future__ import annotations

import itertools
import os
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
from imprint.ingest.files import select_files, within
from imprint.ingest.records import at_commit, build_records, candidates, git_validators
from imprint.logs import get_logger
from imprint.store.records import (
    SourceEntry,
    WriteBatch,
    check_project,
    content_sha,
    project_from_folder,
)
from imprint.tagging import model_tags
from imprint.writes.gateway import Writes

__all__ = ["FileIngest", "IngestReport", "Progress", "ingest_path", "running_ingests"]

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
        return FileIngest(
            runtime,
            path,
            project=project,
            workspace=workspace,
            progress=shown,
            roots=roots,
            group_chunks=group_chunks,
            failures={} if failures is None else failures,
            pace=pace,
        ).run()
    finally:
        with _RUNNING_LOCK:
            _RUNNING.pop(key, None)


def _embedded(runtime: Runtime, texts: list[str], pace: Callable[[], object] | None) -> np.ndarray:
    if pace is None:
        return runtime.embedder().embed(texts)
    return runtime.embedder().embed(texts, between=pace)


class FileIngest:
    """One ingest run of a file or folder (`ingest_path`): each candidate file is passed
    over when unchanged, or read, chunked, tagged, embedded and sent to the writer; with
    `group_chunks`, several files are embedded and written together (`_flush`). One write
    is in flight at a time: the next file is embedded while the writer applies the last."""

    def __init__(
        self,
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
    ) -> None:
        self.started = time.monotonic()
        self.runtime, self.progress, self.failures, self.pace = runtime, progress, failures, pace
        self.group_chunks = group_chunks
        self.path = path = path.expanduser()
        allowed = [Path(r).expanduser().resolve() for r in roots] if roots else [path.resolve()]
        self.allowed = allowed
        chosen = select_files(path, allowed)
        self.root, self.files, self.git = chosen.root.resolve(), list(chosen.files), chosen.git
        self.project = check_project(project) if project else project_from_folder(self.root.name)
        self.writes = Writes(runtime)
        self.ws = self.writes.open(workspace, create=True)
        self.cfg = runtime.config.ingest
        self.known = Deadline(WRITE_TIMEOUT_SEC).wait(
            self.writes.source_state(self.ws, self.project), "ingest"
        )
        self.report = IngestReport(
            root=str(self.root), project=self.project, outside=chosen.outside
        )
        self.seen: set[str] = set()
        self.moved: list[SourceEntry] = []  # unchanged files whose recorded commit is not HEAD's
        self.in_flight: Pending[WriteAck] | None = None
        self.group: list[tuple[WriteBatch, np.ndarray | None]] = []
        self.grouped = 0  # chunks in `group`

    def run(self) -> IngestReport:
        report, root = self.report, self.root
        found, outside_links = candidates(root, self.files, self.allowed)
        report.outside += outside_links
        report.skipped = len(self.files) - len(found) - outside_links
        for done, (rel, listed_mtime) in enumerate(found, start=1):
            self.progress(done, len(found), rel)
            self._file(rel, listed_mtime)
        if self.moved:  # one write for a commit that moved under unchanged files
            self._submit(WriteBatch(set_sources=tuple(self.moved)))
        if self.path.is_dir():
            gone = [s for s, e in self.known.items() if e.root == str(root) and s not in self.seen]
            if gone:
                self._submit(WriteBatch(drop_sources=tuple((self.project, s) for s in gone)))
                report.removed = len(gone)
        self._flush()
        if self.in_flight is not None:
            Deadline(WRITE_TIMEOUT_SEC).wait(self.in_flight, "ingest write")
        report.seconds = time.monotonic() - self.started
        return report

    def _file(self, rel: str, listed_mtime: float | None) -> None:
        report, root = self.report, self.root
        entry = self.known.get(rel)
        if (
            entry is not None
            and listed_mtime is not None
            and entry.mtime == listed_mtime
            and entry.root == str(root)
        ):
            # Unchanged, and not read: nothing here needs its real path.
            self._unchanged(rel, entry)
            return
        try:
            # Resolved at the moment of reading: a link made or changed after the listing
            # is judged by where it points now.
            file = (root / rel).resolve(strict=True)
        except (OSError, RuntimeError):  # gone, or a symlink loop
            report.skipped += 1
            return
        if not within(file, self.allowed):
            log.warning("ingest.outside_roots", source=rel)
            report.outside += 1
            return
        try:
            mtime = file.stat().st_mtime
        except OSError:
            report.skipped += 1
            return
        if entry is not None and entry.mtime == mtime and entry.root == str(root):
            self._unchanged(rel, entry)
            return
        if self.failures.get(rel) == mtime:
            # Failed at this mtime before: the same text fails again. What an earlier text
            # of it indexed stays (seen), as it does for a file that failed just now.
            self.seen.add(rel)
            report.failed.append(rel)
            return
        text = read_utf8(file, self.cfg.max_file_bytes)
        if text is None or not text.strip():
            report.skipped += 1
            return
        self.seen.add(rel)
        sha = content_sha(text)
        validators = git_validators(self.git, rel, text)
        if entry is not None and entry.sha == sha:
            # Touched but not changed: only the registry's mtime (and commit) move.
            update = {"mtime": mtime, "validators": validators}
            self._submit(WriteBatch(set_sources=(entry.model_copy(update=update),)))
            report.unchanged += 1
            return
        self._changed(rel, text, mtime, sha, validators)

    def _unchanged(self, rel: str, entry: SourceEntry) -> None:
        self.seen.add(rel)
        self.report.unchanged += 1
        if self.git is not None and (again := at_commit(entry, self.git, rel)) is not None:
            self.moved.append(again)

    def _changed(self, rel: str, text: str, mtime: float, sha: str, validators: str) -> None:
        report, cfg = self.report, self.cfg
        try:
            records = build_records(
                self.project,
                rel,
                text,
                mtime=mtime,
                target=cfg.chunk_chars,
                overlap=cfg.chunk_overlap,
            )
        except Exception:  # a chunker's bug on this text: the folder's other files go on
            log.exception("ingest.file.failed", source=rel)
            report.failed.append(rel)
            self.failures[rel] = mtime
            return
        self.failures.pop(rel, None)
        max_chunks = cfg.max_chunks_per_source
        if len(records) > max_chunks:
            log.warning("ingest.too_many_chunks", source=rel, chunks=len(records), limit=max_chunks)
            report.skipped += 1
            return
        tags = model_tags(self.runtime, text, rel)  # one request per file, when tagger.llm is on
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
        embeddings = None  # grouped: embedded with the rest of its group, in `_flush`
        if self.group_chunks <= 0:
            embeddings = _embedded(self.runtime, [r.indexed_text for r in records], self.pace)
            delay("ingest.file.embedded")
            if not os.path.lexists(self.root / rel):
                # Deleted while it was read and embedded: write nothing of it (and, not
                # seen, its old records go with the folder's other gone files in `run`).
                self.seen.discard(rel)
                report.skipped += 1
                return
        source = SourceEntry(
            project=self.project,
            source=rel,
            source_type="file",
            mtime=mtime,
            sha=sha,
            chunk_count=len(records),
            root=str(self.root),
            validators=validators,
        )
        self._submit(WriteBatch(upserts=tuple(records), set_sources=(source,)), embeddings)
        report.files += 1
        report.chunks += len(records)

    def _send(self, batch: WriteBatch, embeddings: np.ndarray | None = None) -> None:
        if self.in_flight is not None:
            Deadline(WRITE_TIMEOUT_SEC).wait(self.in_flight, "ingest write")
        self.in_flight = self.writes.send(self.ws, batch, embeddings)

    def _flush(self) -> None:
        """Embed the group's files in one call (as fast as the embedder goes), then write
        them as one batch; a file deleted meanwhile is written as dropped instead."""
        if not self.group:
            return
        report = self.report
        texts = [r.indexed_text for b, _ in self.group for r in b.upserts]
        vectors = _embedded(self.runtime, texts, self.pace) if texts else None
        delay("ingest.file.embedded")
        kept: list[tuple[WriteBatch, np.ndarray | None]] = []
        at = 0
        for batch, _ in self.group:
            size = len(batch.upserts)
            part = vectors[at : at + size] if vectors is not None and size else None
            at += size
            if not size or os.path.lexists(self.root / batch.upserts[0].source):
                kept.append((batch, part))
                continue
            source = batch.upserts[0].source
            self.seen.discard(source)
            report.files, report.chunks = report.files - 1, report.chunks - size
            report.skipped += 1
            kept.append((WriteBatch(drop_sources=((self.project, source),)), None))
        self._send(*_joined(kept))
        self.group.clear()
        self.grouped = 0

    def _submit(self, batch: WriteBatch, embeddings: np.ndarray | None = None) -> None:
        if self.group_chunks <= 0:
            self._send(batch, embeddings)
            return
        self.group.append((batch, embeddings))
        self.grouped += len(batch.upserts)
        if self.grouped >= self.group_chunks:
            self._flush()
