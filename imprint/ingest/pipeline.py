"""Ingest a file or folder: walk, skip what is unchanged, chunk, tag, embed, write.

Embedding runs in the caller's thread while the writer actor applies the previous file, so
the two overlap. A file's source is its path relative to the folder given.

Nothing outside the allowed roots is read: every folder walked and every file read is
resolved first (symlinks, `..`, loops), and one whose real path leaves the roots is counted
and skipped. A file is opened by its real path with O_NOFOLLOW | O_NONBLOCK and read only if
the opened descriptor is a regular file, so a symlink or FIFO swapped in after the listing
is refused rather than followed or waited on.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pathspec
from pydantic import BaseModel

from imprint._fs import read_regular, read_utf8
from imprint.actors.lifecycle import Runtime
from imprint.actors.writer import WriteAck
from imprint.errors import InputError
from imprint.ingest.chunking import chunk_file
from imprint.ingest.tags import file_kind, lang_of, rule_tags, supported
from imprint.logs import get_logger
from imprint.reads.deadline import Deadline, Pending
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
    outside: int = 0
    seconds: float = 0.0

    @property
    def chunks_per_sec(self) -> float:
        return self.chunks / self.seconds if self.seconds > 0 else 0.0

    def summary(self) -> str:
        return (
            f"ingested {self.files} files ({self.chunks} chunks) into project {self.project!r}; "
            f"{self.unchanged} unchanged, {self.skipped} skipped, {self.removed} removed, "
            f"{self.outside} outside the allowed roots; "
            f"{self.seconds:.1f} s, {self.chunks_per_sec:.1f} chunks/s"
        )


def within(path: Path, roots: Sequence[Path]) -> bool:
    """True when `path` (already resolved) is one of `roots` or under one."""
    return any(path == r or path.is_relative_to(r) for r in roots)


IGNORE_FILE_MAX_BYTES = 1 << 20


def _ignore_rules(file: Path) -> pathspec.GitIgnoreSpec | None:
    """The rules of one ignore file (.gitignore, .git/info/exclude), or None."""
    data = read_regular(file, IGNORE_FILE_MAX_BYTES)
    if not data:
        return None
    return pathspec.GitIgnoreSpec.from_lines(data.decode("utf-8", "replace").splitlines())


def _ignored(rel: str, chain: Sequence[tuple[str, pathspec.GitIgnoreSpec]]) -> bool:
    """Whether git would ignore `rel` (a folder ends in "/"): the deepest ignore file with a
    matching rule decides, as in git, and its last matching rule (a `!` re-includes)."""
    for base, rules in reversed(chain):
        result = rules.check_file(rel[len(base) + 1 :] if base else rel)
        if result.include is not None:
            return result.include
    return False


def _walk_files(folder: Path, roots: Sequence[Path] | None = None) -> tuple[list[str], int]:
    """Files under `folder` that the ignore rules keep (following symlinked folders whose
    real path stays within `roots`, each real folder once), and how many folders were left
    out for leaving them.

    Ignore rules are read here, never by running git: git reads the folder's own
    `.git/config`, and several of its keys run programs (`core.fsmonitor` on every
    `ls-files`, and `include.path` pulls in further files that command-line overrides do not
    cover), so a foreign checkout or unpacked archive would run code as the user. The rules
    honoured: `.git/info/exclude` and a `.gitignore` in any folder, deeper ones first."""
    roots = roots or [folder.resolve()]
    top: list[tuple[str, pathspec.GitIgnoreSpec]] = []
    exclude = _ignore_rules(folder / ".git" / "info" / "exclude")
    if exclude is not None:
        top.append(("", exclude))
    chains: dict[str, list[tuple[str, pathspec.GitIgnoreSpec]]] = {"": top}
    found: list[str] = []
    outside = 0
    visited = {folder.resolve()}
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=True):
        here = Path(dirpath).relative_to(folder).as_posix()
        here = "" if here == "." else here
        chain = chains.pop(here)
        if ".gitignore" in filenames:
            rules = _ignore_rules(Path(dirpath, ".gitignore"))
            chain = [*chain, (here, rules)] if rules is not None else chain
        kept = []
        for d in sorted(dirnames):
            rel = f"{here}/{d}" if here else d
            if d in _SKIP_DIRS or d.startswith(".") or _ignored(rel + "/", chain):
                continue
            real = Path(dirpath, d).resolve()
            if not within(real, roots):
                outside += 1
            elif real not in visited:  # a loop, or a second link to a folder already walked
                visited.add(real)
                kept.append(d)
                chains[rel] = chain
        dirnames[:] = kept
        for name in filenames:
            rel = f"{here}/{name}" if here else name
            if not _ignored(rel, chain):
                found.append(rel)
    return sorted(found), outside


def walk(path: Path, roots: Sequence[Path] | None = None) -> tuple[Path, list[str], int]:
    """The folder sources are relative to, the candidate files under it, and how many
    folders were left out for leaving `roots`."""
    if not path.exists():
        raise InputError(f"path: {str(path)!r} does not exist")
    if not os.access(path, os.R_OK):
        raise InputError(f"path: {str(path)!r} is not readable")
    if path.is_file():
        return path.parent, [path.name], 0
    if not path.is_dir():
        raise InputError(f"path: {str(path)!r} is neither a file nor a folder")
    found, outside = _walk_files(path, roots)
    return path, found, outside


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
            )
        )
    return records


def _candidates(root: Path, files: list[str], roots: Sequence[Path]) -> tuple[list[str], int]:
    """Supported files to read, and how many listed links lead outside `roots` (git lists a
    link to a folder as one entry, so it is judged here, where its target is known)."""
    found, outside = [], 0
    for rel in files:
        file = root / rel
        if file.is_symlink():
            try:
                if not within(file.resolve(strict=True), roots):
                    outside += 1
                    continue
            except (OSError, RuntimeError):  # dangling, or a loop
                continue
        if supported(rel) and file.is_file():
            found.append(rel)
    return found, outside


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
) -> IngestReport:
    """Ingest `path`; nothing whose real path is outside `roots` (default: the path
    itself) is read. While it runs, `running_ingests` shows its progress."""
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
            runtime, path, project=project, workspace=workspace, progress=shown, roots=roots
        )
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
    roots: Sequence[Path] | None,
) -> IngestReport:
    started = time.monotonic()
    path = path.expanduser()
    allowed = [Path(r).expanduser().resolve() for r in roots] if roots else [path.resolve()]
    root, files, outside_dirs = walk(path, allowed)
    root = root.resolve()
    project = check_project(project) if project else project_from_folder(root.name)
    writes = Writes(runtime)
    ws = writes.open(workspace, create=True)
    cfg = runtime.config.ingest
    deadline = Deadline(WRITE_TIMEOUT_SEC)
    known = deadline.wait(writes.source_state(ws, project), "ingest")
    report = IngestReport(root=str(root), project=project, outside=outside_dirs)
    candidates, outside_links = _candidates(root, files, allowed)
    report.outside += outside_links
    report.skipped = len(files) - len(candidates) - outside_links
    max_chunks = cfg.max_chunks_per_source
    seen: set[str] = set()
    in_flight: Pending[WriteAck] | None = None

    def submit(batch: WriteBatch, embeddings: np.ndarray | None = None) -> None:
        nonlocal in_flight
        if in_flight is not None:
            Deadline(WRITE_TIMEOUT_SEC).wait(in_flight, "ingest write")
        in_flight = writes.send(ws, batch, embeddings)

    for done, rel in enumerate(candidates, start=1):
        progress(done, len(candidates), rel)
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
        entry = known.get(rel)
        if entry is not None and entry.mtime == mtime and entry.root == str(root):
            seen.add(rel)
            report.unchanged += 1
            continue
        text = read_utf8(file, cfg.max_file_bytes)
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
        embeddings = runtime.embedder().embed([r.indexed_text for r in records])
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
