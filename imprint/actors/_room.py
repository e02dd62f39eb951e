"""Room on the disk for a write: how full is too full, and what a full disk looks like."""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

from imprint.store.records import WriteBatch

__all__ = ["DEFAULT_MIN_FREE_MB", "disk_full", "free_bytes", "no_room", "one_line"]

MIB = 1_048_576
DEFAULT_MIN_FREE_MB = 64
# What a write may add to the disk, as a multiple of its own text and vectors: the journal,
# Chroma's log and its segments, the records and their FTS entries, each through a WAL.
WRITE_GROWTH = 8
RECORD_OVERHEAD_BYTES = 2048  # a vector (384 floats) and its metadata, per record


def disk_full(exc: Exception) -> bool:
    """ENOSPC from Chroma or the OS, or SQLite's SQLITE_FULL ("database or disk is full")."""
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return True
    if isinstance(exc, sqlite3.OperationalError):
        return "full" in str(exc)
    return "No space left on device" in str(exc)


def one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())[:200] or type(exc).__name__


def free_bytes(folder: Path) -> int:
    """Bytes an unprivileged process may still write on the filesystem holding `folder`."""
    info = os.statvfs(folder)
    return info.f_bavail * info.f_frsize


def _folder_bytes(folder: Path) -> int:
    """The size of the files under `folder` (Chroma's: a database and a few segment files)."""
    total = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                total += _folder_bytes(Path(entry.path))
            else:
                total += entry.stat(follow_symlinks=False).st_size
        except OSError:
            continue
    return total


def _mb(size: int) -> str:
    return f"{size / MIB:.1f} MB"


def no_room(
    folder: Path, free: int, min_free_mb: int, batch: WriteBatch | None, what: str
) -> str | None:
    """Why `free` bytes on the disk holding the workspace `folder` are too few to write
    `batch` safely, or None."""
    # An HNSW index grows by a fifth when it fills up: a quarter of Chroma's files.
    need = min_free_mb * MIB + _folder_bytes(folder / "chroma") // 4
    if batch is not None:
        text = sum(len(r.content.encode()) + RECORD_OVERHEAD_BYTES for r in batch.upserts)
        need += WRITE_GROWTH * text
    if free >= need:
        return None
    return (
        f"{what}: only {_mb(free)} free on the disk holding {folder}; writes keep "
        f"{_mb(need)} free (store.min_free_mb = {min_free_mb}, plus room for the "
        "index to grow); nothing was stored; free some space and write again"
    )
