"""One watched folder: file events from `watchfiles`, debounced into batches; each batch
is one ingest of the folder (`imprint.writes.files`), which reads only what changed
(unchanged files are skipped by their recorded mtime), removes what was deleted or became
ignored, and writes in groups of files rather than one write per file.

Events go to a pending set; the worker starts a batch once no new event arrived for
`quiet_sec` (or `max_wait_sec` after the first, under a steady stream), so a branch switch
touching 2,000 files is one batch with progress. Events during a batch wait for the next.
The first batch is a rescan: what changed while nobody watched (the daemon was down or
killed mid-batch) is indexed then. The event thread is watching before that rescan starts,
so nothing changed in between is missed.

Events inside `.git` are not files of the index, but a commit, a checkout or a reset moves
the folder's HEAD (`.git/HEAD`, a branch under `.git/refs/heads`, `.git/packed-refs`): that
starts a batch too, with no file counted as pending, so every file's recorded commit follows
the new HEAD (a commit that changes no working file is otherwise never seen).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from imprint.logs import get_logger
from imprint.watch.folders import WatchedFolder
from imprint.writes.files import IngestReport, Progress

__all__ = ["FolderWatcher", "WatchRow", "moves_head"]

log = get_logger("imprint.watch")

# Folders whose events never matter to an index (git's own files, caches, environments).
QUIET_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", ".venv", "venv", ".tox"})
RETRY_SEC = 5.0

Ingest = Callable[[WatchedFolder, Progress], IngestReport]


class WatchRow(BaseModel):
    """What `status` and the dashboard show of one watched folder."""

    path: str
    project: str
    workspace: str
    state: str  # starting, watching, indexing, retrying, stopped
    pending: int = 0  # files changed and not yet indexed (the running batch's included)
    batch_done: int = 0  # of the running batch: files checked so far, of batch_total
    batch_total: int = 0
    batches: int = 0
    last_indexed_at: float = 0.0  # when the last batch that indexed a change finished
    last_batch: str = ""
    error: str = ""


def _wanted(path: str) -> bool:
    return not QUIET_DIRS.intersection(Path(path).parts) and not path.endswith(("~", ".swp"))


def moves_head(path: str) -> bool:
    """Whether a changed path inside a `.git` folder is one that a commit, a checkout or a
    reset rewrites: HEAD, a branch ref, the packed refs (not their `.lock` files, nor the
    index, which `git status` rewrites too)."""
    parts = Path(path).parts
    if ".git" not in parts or path.endswith(".lock"):
        return False
    rest = parts[len(parts) - parts[::-1].index(".git") :]
    return rest in (("HEAD",), ("packed-refs",)) or (
        rest[:2] == ("refs", "heads") and len(rest) > 2
    )


class FolderWatcher:
    """Watches one folder on two threads (events, batches) until `stop`."""

    def __init__(
        self,
        folder: WatchedFolder,
        ingest: Ingest,
        *,
        project: str,
        quiet_sec: float = 0.25,
        max_wait_sec: float = 3.0,
    ) -> None:
        self.folder = folder
        self._ingest = ingest
        self._project = project
        self.quiet_sec = quiet_sec
        self.max_wait_sec = max_wait_sec
        self.ready = threading.Event()  # the event thread is watching
        self._stop = threading.Event()
        self._cond = threading.Condition()
        self._pending: set[str] = set()
        self._head_moved = False  # HEAD or a branch moved since the last batch started
        self._events = 0  # notes received, so the worker sees a burst still arriving
        self._batch: set[str] = set()
        self._state = "starting"
        self._progress = (0, 0)
        self.batches = 0
        self.indexing_sec = 0.0  # the ingests' own time, summed over batches
        self._last_indexed_at = 0.0
        self._last_batch = ""
        self._error = ""
        self._threads: list[threading.Thread] = []

    def start(self) -> FolderWatcher:
        for target, name in ((self._watch, "events"), (self._work, "batches")):
            thread = threading.Thread(target=target, name=f"imprint-watch-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def signal_stop(self) -> None:
        """Ask both threads to end (a batch in progress finishes its ingest first)."""
        self._stop.set()
        with self._cond:
            self._cond.notify_all()

    def stop(self, timeout: float = 10.0) -> None:
        self.signal_stop()
        for thread in self._threads:
            thread.join(timeout)
        self._state = "stopped"

    def note(self, paths: set[str]) -> None:
        """Changed paths (absolute, from the events): queued for the next batch."""
        with self._cond:
            self._pending.update(p for p in paths if _wanted(p))
            self._head_moved = self._head_moved or any(map(moves_head, paths))
            self._events += 1
            self._cond.notify_all()

    def wait(self, done: Callable[[FolderWatcher], bool], timeout: float) -> bool:
        """Wait until `done(self)` holds (checked after every batch); False on timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not done(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def row(self) -> WatchRow:
        with self._cond:
            return WatchRow(
                path=self.folder.path,
                project=self._project,
                workspace=self.folder.workspace,
                state=self._state,
                pending=len(self._pending | self._batch),
                batch_done=self._progress[0],
                batch_total=self._progress[1],
                batches=self.batches,
                last_indexed_at=self._last_indexed_at,
                last_batch=self._last_batch,
                error=self._error,
            )

    def _watch(self) -> None:
        import watchfiles

        try:
            # A timeout yields an empty set: the first one says the watch is set up.
            for changes in watchfiles.watch(
                self.folder.path,
                watch_filter=None,
                debounce=max(1, int(self.quiet_sec * 1000)),
                step=50,
                stop_event=self._stop,
                rust_timeout=200,
                yield_on_timeout=True,
                raise_interrupt=False,
            ):
                self.ready.set()
                if changes:
                    self.note({path for _, path in changes})
        except Exception as exc:  # the folder vanished, out of inotify watches
            log.error("watch.events.failed", path=self.folder.path, error=str(exc)[:300])
            with self._cond:
                self._error = f"watching stopped: {str(exc)[:200]}"
        finally:
            self.ready.set()

    def _work(self) -> None:
        self.ready.wait()
        first = True  # the rescan of what changed while nobody watched
        while not self._stop.is_set():
            with self._cond:
                if not first:
                    while not (self._pending or self._head_moved) and not self._stop.is_set():
                        self._state = "watching"
                        self._cond.wait()
                    self._debounce()
                if self._stop.is_set():
                    return
                self._batch, self._pending = self._pending, set()
                head_moved, self._head_moved = self._head_moved, False
                self._state, self._progress = "indexing", (0, 0)
            ok = self._run(rescan=first, head_moved=head_moved)
            first = first and not ok
            if not ok:
                with self._cond:
                    self._head_moved = self._head_moved or head_moved
                self._stop.wait(RETRY_SEC)

    def _debounce(self) -> None:
        """Hold the batch (the lock held by the caller) until the burst stops arriving."""
        started = time.monotonic()
        while not self._stop.is_set():
            seen = self._events
            self._cond.wait(self.quiet_sec)
            if self._events == seen or time.monotonic() - started >= self.max_wait_sec:
                return

    def _run(self, *, rescan: bool, head_moved: bool = False) -> bool:
        def progress(done: int, total: int, source: str) -> None:
            with self._cond:
                self._progress = (done, total)

        changed = len(self._batch)
        try:
            report = self._ingest(self.folder, progress)
        except Exception as exc:
            log.exception("watch.batch.failed", path=self.folder.path)
            with self._cond:
                self._pending |= self._batch  # tried again after RETRY_SEC
                self._batch = set()
                self._state, self._error = "retrying", str(exc).splitlines()[0][:300]
                self._cond.notify_all()
            return False
        log.info(
            "watch.batch.done",
            path=self.folder.path,
            rescan=rescan,
            head_moved=head_moved,
            changed=changed,
            files=report.files,
            failed=len(report.failed),
            removed=report.removed,
            chunks=report.chunks,
            seconds=round(report.seconds, 3),
        )
        with self._cond:
            self._batch = set()
            self.batches += 1
            self.indexing_sec += report.seconds
            if report.files or report.removed or rescan:
                self._last_indexed_at = time.time()
            what = "rescan" if rescan else f"{changed} changed paths"
            if head_moved and not rescan:
                what += " and a new HEAD"
            failed = f"{len(report.failed)} failed, " if report.failed else ""
            self._last_batch = (
                f"{what}: {report.files} files indexed ({report.chunks} chunks), "
                f"{failed}{report.removed} removed, {report.seconds:.1f} s"
            )
            self._error = ""
            self._cond.notify_all()
        return True
