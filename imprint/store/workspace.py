"""The opened resources of one workspace: its lock, its Chroma collection, its SQLite file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from imprint.store.embedder import Embedder
from imprint.store.sqlite_read import SqliteReader
from imprint.store.sqlite_write import SqliteWriter
from imprint.store.vectors import StoreLock, VectorIndex, open_client
from imprint.types import WorkspaceName
from imprint.workspaces import workspace_dir

__all__ = ["WorkspaceStore"]


class WorkspaceStore:
    """Opened by the one process that owns the workspace; closed in reverse order."""

    def __init__(
        self,
        data_dir: Path,
        name: WorkspaceName,
        embedder: Embedder,
        *,
        chroma_url: str = "",
        http_client: Any = None,
        namespace: str = "",
    ) -> None:
        self.name = name
        self.folder = workspace_dir(data_dir, name)
        self.sqlite_path = self.folder / "imprint.sqlite3"
        self.chroma_url = chroma_url
        self._lock = StoreLock(self.folder)
        self._lock.acquire()
        client: Any = None
        try:
            client = http_client if chroma_url else open_client(self.folder / "chroma", "")
            self.vectors = VectorIndex(client, name, embedder, namespace if chroma_url else "")
            self.sqlite = SqliteWriter(self.sqlite_path)
        except BaseException:
            if client is not None and not chroma_url:  # a server's client is the runtime's
                client.close()
            self._lock.release()
            raise

    def reader(self) -> SqliteReader:
        """A new read-only connection, for one reader actor."""
        return SqliteReader(self.sqlite_path)

    def close(self) -> None:
        """SQLite, then Chroma (an embedded client releases its files and its cached
        segments: the next opener reads them from disk), then the lock."""
        try:
            try:
                self.sqlite.close()
            finally:
                self.vectors.close()
        finally:
            self._lock.release()
