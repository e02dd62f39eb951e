"""Ingest a file or folder: walk, skip what is unchanged, chunk, tag, embed, write.

Embedding runs in the caller's thread while the writer actor applies the previous file, so
the two overlap. A file's source is its path relative to the folder given.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pathspec
from pydantic import BaseModel

from imprint.actors.lifecycle import Runtime
from imprint.actors.write_messages import SourceState, Write
from imprint.actors.writer import WriteAck
from imprint.errors import InputError
from imprint.ingest.chunking import chunk_text
from imprint.ingest.tags import file_kind, lang_of, rule_tags, supported
from imprint.reads.deadline import Deadline, Pending
from imprint.store.records import Record, SourceType, content_sha, make_id
from imprint.store.sqlite import SourceEntry, WriteBatch
from imprint.tagging import model_tags

__all__ = ["IngestReport", "Progress", "build_records", "ingest_path", "running_ingests", "walk"]

Progress = Callable[[int, int, str], None]
_SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox"}
WRITE_TIMEOUT_SEC = 300.0


class IngestReport(BaseModel):
    root: str
    project: str
    files: int = 0
    chunks: int = 0
    unchanged: int = 0
    skipped: int = 0
    removed: int = 0
    seconds: float = 0.0

    @property
    def chunks_per_sec(self) -> float:
        return self.chunks / self.seconds if self.seconds > 0 else 0.0

    def summary(self) -> str:
        return (
            f"ingested {self.files} files ({self.chunks} chunks) into project {self.project!r}; "
            f"{self.unchanged} unchanged, {self.skipped} skipped, {self.removed} removed; "
            f"{self.seconds:.1f} s, {self.chunks_per_sec:.1f} chunks/s"
        )


def _git_files(folder: Path) -> list[str] | None:
    """Files git would track here (tracked plus untracked, minus ignored), or None."""
    if shutil.which("git") is None:
        return None
    probe = subprocess.run(
        ["git", "-C", str(folder), "rev-parse", "--is-inside-work-tree"],
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0 or probe.stdout.strip() != "true":
        return None
    listing = subprocess.run(
        ["git", "-C", str(folder), "ls-files", "-co", "--exclude-standard", "-z"],
        capture_output=True,
        check=False,
    )
    if listing.returncode != 0:
        return None
    return sorted(p for p in listing.stdout.decode("utf-8", "replace").split("\0") if p)


def _walk_files(folder: Path) -> list[str]:
    ignore = None
    gitignore = folder / ".gitignore"
    if gitignore.is_file():
        ignore = pathspec.PathSpec.from_lines(
            "gitwildmatch", gitignore.read_text(encoding="utf-8", errors="replace").splitlines()
        )
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
        for name in filenames:
            rel = Path(dirpath, name).relative_to(folder).as_posix()
            if ignore is None or not ignore.match_file(rel):
                found.append(rel)
    return sorted(found)


def walk(path: Path) -> tuple[Path, list[str]]:
    """The folder sources are relative to, and the candidate files under it."""
    if not path.exists():
        raise InputError(f"path: {str(path)!r} does not exist")
    if not os.access(path, os.R_OK):
        raise InputError(f"path: {str(path)!r} is not readable")
    if path.is_file():
        return path.parent, [path.name]
    if not path.is_dir():
        raise InputError(f"path: {str(path)!r} is neither a file nor a folder")
    files = _git_files(path)
    return path, files if files is not None else _walk_files(path)


def _read_text(file: Path, max_bytes: int) -> str | None:
    """The file's text, or None for a binary, oversized or unreadable file."""
    try:
        if file.stat().st_size > max_bytes:
            return None
        data = file.read_bytes()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


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
    pieces = chunk_text(text, file_kind(lang), target, overlap)
    now = time.time()
    records = []
    for index, piece in enumerate(pieces):
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
            )
        )
    return records


def _candidates(root: Path, files: list[str]) -> Iterator[str]:
    for rel in files:
        if supported(rel) and (root / rel).is_file():
            yield rel


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
) -> IngestReport:
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
        return _ingest_path(runtime, path, project=project, workspace=workspace, progress=shown)
    finally:
        with _RUNNING_LOCK:
            _RUNNING.pop(key, None)


def _ingest_path(
    runtime: Runtime,
    path: Path,
    *,
    project: str,
    workspace: str,
    progress: Progress,
) -> IngestReport:
    started = time.monotonic()
    path = path.expanduser()
    root, files = walk(path)
    root = root.resolve()
    project = project or root.name
    ws = runtime.resolve(workspace, create=True)
    runtime.workspace(ws)
    writer = runtime.writer(ws)
    cfg = runtime.config.ingest
    deadline = Deadline(WRITE_TIMEOUT_SEC)
    known = deadline.wait(writer.source_state(SourceState(project=project)), "ingest")
    report = IngestReport(root=str(root), project=project)
    candidates = list(_candidates(root, files))
    report.skipped = len(files) - len(candidates)
    seen: set[str] = set()
    in_flight: Pending[WriteAck] | None = None

    def submit(batch: WriteBatch, embeddings: np.ndarray | None = None) -> None:
        nonlocal in_flight
        if in_flight is not None:
            Deadline(WRITE_TIMEOUT_SEC).wait(in_flight, "ingest write")
        in_flight = writer.write(Write(batch=batch), embeddings)

    for done, rel in enumerate(candidates, start=1):
        file = root / rel
        progress(done, len(candidates), rel)
        try:
            mtime = file.stat().st_mtime
        except OSError:
            report.skipped += 1
            continue
        entry = known.get(rel)
        if entry is not None and entry.mtime == mtime and entry.root == str(root):
            seen.add(rel)
            report.unchanged += 1
            continue
        text = _read_text(file, cfg.max_file_bytes)
        if text is None or not text.strip():
            report.skipped += 1
            continue
        seen.add(rel)
        sha = content_sha(text)
        if entry is not None and entry.sha == sha:
            # Touched but not changed: only the registry's mtime moves.
            submit(WriteBatch(set_sources=(entry.model_copy(update={"mtime": mtime}),)))
            report.unchanged += 1
            continue
        records = build_records(
            project, rel, text, mtime=mtime, target=cfg.chunk_chars, overlap=cfg.chunk_overlap
        )
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
        embeddings = runtime.embedder().embed([r.content for r in records])
        source = SourceEntry(
            project=project,
            source=rel,
            source_type="file",
            mtime=mtime,
            sha=sha,
            chunk_count=len(records),
            root=str(root),
        )
        submit(WriteBatch(upserts=tuple(records), set_sources=(source,)), embeddings)
        report.files += 1
        report.chunks += len(records)

    if path.is_dir():
        gone = [s for s, e in known.items() if e.root == str(root) and s not in seen]
        if gone:
            submit(WriteBatch(drop_sources=tuple((project, s) for s in gone)))
            report.removed = len(gone)
    if in_flight is not None:
        Deadline(WRITE_TIMEOUT_SEC).wait(in_flight, "ingest write")
    report.seconds = time.monotonic() - started
    return report
