"""A consistent copy of one workspace's files (`imprint backup`), and their checksums.

The SQLite file is copied with SQLite's online backup API, the Chroma folder file by file;
the caller (the workspace's writer, in its own mailbox) holds every write back meanwhile,
so the two copies hold the same writes. Readers may go on: reading changes neither.
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

from imprint._faults import delay, failpoint
from imprint._fs import private_dir
from imprint.errors import SQLITE_FILE, StoreError
from imprint.store.workspace import WorkspaceStore

__all__ = ["CHROMA_DIR", "copy_store", "file_sums", "sha256_file"]

CHROMA_DIR = "chroma"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def file_sums(folder: Path) -> dict[str, dict[str, int | str]]:
    """Every file under `folder` (by its path relative to it): its size and SHA-256."""
    return {
        path.relative_to(folder).as_posix(): {
            "bytes": path.stat().st_size,
            "sha256": sha256_file(path),
        }
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def copy_store(store: WorkspaceStore, dest: Path) -> dict[str, dict[str, int | str]]:
    """Copy the workspace's SQLite file and Chroma folder into `dest` (made, empty); the
    copied files' sums. The store's lock files are not copied: they belong to its owner."""
    if store.chroma_url:
        raise StoreError(
            "backup: store.chroma_url is set: the vectors live on the Chroma server; back "
            "that server up itself (an `imprint export` carries the text of every record)"
        )
    private_dir(dest)
    target = sqlite3.connect(dest / SQLITE_FILE)
    try:
        store.sqlite.conn.backup(target)
    finally:
        target.close()
    # Killed (or held, so that a test can kill the process) between the two copies.
    failpoint("backup.copy")
    delay("backup.copy")
    chroma = store.folder / CHROMA_DIR
    if chroma.is_dir():
        shutil.copytree(chroma, dest / CHROMA_DIR)
    return file_sums(dest)
