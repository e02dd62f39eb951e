"""The daemon's watched folders: one `FolderWatcher` each, started again from the persisted
list when the daemon starts, and its answers to `imprint watch` (add, list, stop).

`watch_rows(data_dir)` gives the rows of the host serving that data dir in this process
(none when no daemon runs here): `status` and the dashboard show them."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from imprint.errors import InputError
from imprint.logs import get_logger
from imprint.store.records import check_project, project_from_folder
from imprint.watch.folders import WatchedFolder, load_folders, save_folders
from imprint.watch.watcher import FolderWatcher, WatchRow
from imprint.writes.files import IngestReport, Progress, ingest_path

if TYPE_CHECKING:
    from imprint.actors.lifecycle import Runtime

__all__ = ["GROUP_CHUNKS", "WatchHost", "format_watch", "watch_rows"]

log = get_logger("imprint.watch")

GROUP_CHUNKS = 256  # a batch writes about this many chunks at a time
STOP_SEC = 10.0  # how long a closing daemon waits for its watchers, all together
_HOSTS: dict[str, WatchHost] = {}
_HOSTS_LOCK = threading.Lock()


def watch_rows(data_dir: Path) -> list[WatchRow]:
    """The watched folders of the daemon serving `data_dir` in this process."""
    with _HOSTS_LOCK:
        host = _HOSTS.get(str(data_dir))
    return host.rows() if host is not None else []


def format_watch(rows: list[WatchRow]) -> list[str]:
    """The status lines of the watched folders (none when nothing is watched)."""
    lines = []
    for row in rows:
        when = (
            time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(row.last_indexed_at))
            if row.last_indexed_at
            else "-"
        )
        doing = row.state
        if row.state == "indexing" and row.batch_total:
            doing += f" {row.batch_done}/{row.batch_total} files checked"
        line = (
            f"  watch {row.path} (project {row.project}): {doing}; {row.pending} changed "
            f"files not yet indexed; last indexed change {when}"
        )
        lines.append(line + (f"; error: {row.error}" if row.error else ""))
    return lines


class WatchHost:
    """Every watched folder of one data dir, served by its daemon."""

    def __init__(
        self,
        data_dir: Path,
        wait_runtime: Callable[[float], Runtime],
        *,
        quiet_sec: float = 0.25,
        max_wait_sec: float = 3.0,
    ) -> None:
        self.data_dir = data_dir
        self._wait_runtime = wait_runtime
        self._quiet_sec = quiet_sec
        self._max_wait_sec = max_wait_sec
        self._lock = threading.Lock()
        self._folders: list[WatchedFolder] = []
        self._watchers: dict[str, FolderWatcher] = {}
        # Per folder, each file whose chunking failed and its mtime then: not read again by
        # a later batch until it changes (only that folder's batch thread touches its own).
        self._failures: dict[str, dict[str, float]] = {}
        self._stopped = False

    def start(self) -> WatchHost:
        """Watch the persisted folders again (each begins with a rescan)."""
        with _HOSTS_LOCK:
            _HOSTS[str(self.data_dir)] = self
        with self._lock:
            self._folders = load_folders(self.data_dir)
            for folder in self._folders:
                self._start(folder)
        return self

    def active(self) -> bool:
        """Whether any folder is watched (the daemon then stays up while idle)."""
        with self._lock:
            return bool(self._watchers)

    def watcher(self, path: str) -> FolderWatcher | None:
        with self._lock:
            return self._watchers.get(path)

    def rows(self) -> list[WatchRow]:
        with self._lock:
            watchers = list(self._watchers.values())
        return [w.row() for w in watchers]

    def add(self, path: str, project: str = "", workspace: str = "") -> WatchRow:
        folder = _checked(path, project, workspace)
        with self._lock:
            if self._stopped:
                raise InputError("watch: the daemon is stopping; run the command again")
            old = self._watchers.pop(folder.path, None)
            self._folders = [f for f in self._folders if f.path != folder.path] + [folder]
            save_folders(self.data_dir, self._folders)
            watcher = self._start(folder)
        if old is not None:
            old.stop()
        return watcher.row()

    def remove(self, path: str) -> WatchRow:
        resolved = str(Path(path).expanduser().resolve())
        with self._lock:
            watcher = self._watchers.pop(resolved, None)
            if watcher is None:
                known = ", ".join(sorted(self._watchers)) or "none"
                raise InputError(f"path: {path!r} is not watched; watched: {known}")
            self._folders = [f for f in self._folders if f.path != resolved]
            save_folders(self.data_dir, self._folders)
        row = watcher.row()
        watcher.stop()
        return row.model_copy(update={"state": "stopped"})

    def stop(self) -> None:
        """Stop every watcher (the daemon is closing); the list stays persisted."""
        with self._lock:
            self._stopped = True
            watchers, self._watchers = list(self._watchers.values()), {}
        for watcher in watchers:
            watcher.signal_stop()  # all at once: a batch in progress finishes first
        deadline = time.monotonic() + STOP_SEC
        for watcher in watchers:
            watcher.stop(max(0.1, deadline - time.monotonic()))
        with _HOSTS_LOCK:
            if _HOSTS.get(str(self.data_dir)) is self:
                del _HOSTS[str(self.data_dir)]

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        """`imprint watch`'s request: {"op": "add" | "list" | "stop", ...} -> {"rows": ...}."""
        op = request.get("op")
        path, project = request.get("path", ""), request.get("project", "")
        workspace = request.get("workspace", "")
        if not all(isinstance(v, str) for v in (path, project, workspace)):
            raise InputError("watch: path, project and workspace must be strings")
        if op == "add":
            rows = [self.add(path, project, workspace)]
        elif op == "stop":
            rows = [self.remove(path)]
        elif op == "list":
            rows = self.rows()
        else:
            raise InputError(f"op: {op!r} is not allowed; add, list or stop")
        return {"rows": [r.model_dump(mode="json") for r in rows]}

    def _start(self, folder: WatchedFolder) -> FolderWatcher:
        project = folder.project or project_from_folder(Path(folder.path).name)
        watcher = FolderWatcher(
            folder,
            self._ingest,
            project=project,
            quiet_sec=self._quiet_sec,
            max_wait_sec=self._max_wait_sec,
        ).start()
        self._watchers[folder.path] = watcher
        return watcher

    def _ingest(self, folder: WatchedFolder, progress: Progress) -> IngestReport:
        runtime = self._wait_runtime(120)
        # The folder itself and the configured roots: a link inside may lead only there.
        roots = [Path(r) for r in runtime.config.ingest.allowed_roots] + [Path(folder.path)]

        def paced(done: int, total: int, source: str) -> None:
            # Before each file (read, chunk, embed, write): a recall in flight goes first.
            runtime.priority.turn("watch.batch")
            progress(done, total, source)

        return ingest_path(
            runtime,
            Path(folder.path),
            project=folder.project,
            workspace=folder.workspace,
            progress=paced,
            pace=lambda: runtime.priority.turn("watch.embed"),
            roots=roots,
            group_chunks=GROUP_CHUNKS,
            failures=self._failures.setdefault(folder.path, {}),
        )


def _checked(path: str, project: str, workspace: str) -> WatchedFolder:
    """The folder to watch, resolved; a clear one-line error for what cannot be watched."""
    if not path.strip():
        raise InputError("path: a folder to watch is needed")
    folder = Path(path).expanduser()
    if not folder.is_absolute():
        raise InputError(f"path: {path!r} must be absolute (the command line resolves it)")
    if not folder.is_dir():
        raise InputError(f"path: {path!r} is not a folder")
    if project:
        check_project(project)
    return WatchedFolder(path=str(folder.resolve()), project=project, workspace=workspace)
