"""Rolling backups: while the daemon runs, a backup of the data dir every
`backup.every_hours` into `{data_dir}/backups/auto-<UTC time>`, verified, and the oldest
rolling ones beyond `backup.keep` removed (`imprint.writes.backup`).

The next one is due `every_hours` after the newest rolling backup on disk (at once when
there is none), so a daemon that exits when idle and starts again keeps the rhythm. The
clock and the wait are injected: tests drive the schedule with a fake clock, no sleeps.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from imprint.daemon._log import log

if TYPE_CHECKING:
    from imprint.actors.lifecycle import Runtime
    from imprint.config import BackupConfig
    from imprint.writes.backup import BackupRecord

__all__ = ["RollingBackups"]

# However far off the next backup is, the wait wakes this often (a clock that jumped, a
# backups folder emptied by hand): a check of the folder, nothing more.
RECHECK_SEC = 3600.0


class RollingBackups:
    """The schedule (`due`, `tick`) and the thread that keeps it (`start`, `stop`)."""

    def __init__(
        self,
        data_dir: Path,
        config: BackupConfig,
        wait_runtime: Callable[[float], Runtime],
        *,
        clock: Callable[[], float] = time.time,
        wait: Callable[[float], bool] | None = None,
        started: Callable[[float], bool] = lambda _timeout: True,
    ) -> None:
        self.data_dir = data_dir
        self.every_sec = config.every_hours * 3600.0
        self.keep = config.keep
        self._wait_runtime = wait_runtime
        self._clock = clock
        self._stopping = threading.Event()
        self._wait = wait or self._stopping.wait
        self._started = started
        self._thread: threading.Thread | None = None
        self._tried: float | None = None  # the last attempt, failed or not

    def due(self) -> float | None:
        """When the next rolling backup is due (clock seconds); None when they are off."""
        if self.every_sec <= 0:
            return None
        from imprint.writes.backup import rolling_backups

        times = [made for made, _ in rolling_backups(self.data_dir)[-1:]]
        # After a failure too the next try waits its turn: a store that cannot be backed
        # up (a Chroma server's) is not tried in a loop.
        if self._tried is not None:
            times.append(self._tried)
        return max(times) + self.every_sec if times else self._clock()

    def tick(self) -> BackupRecord | None:
        """Make a rolling backup when one is due, then prune; the record, or None when none
        was due. A backup that fails is kept as the last backup (status shows it)."""
        due = self.due()
        now = self._clock()
        if due is None or now < due:
            return None
        from imprint.writes.backup import make_backup, prune_rolling, record_failure

        self._tried = now
        try:
            record = make_backup(self._wait_runtime(120), made_by="schedule", now=now)
        except Exception as exc:
            log.exception("backup.rolling.failed")
            return record_failure(self.data_dir, "schedule", now, f"{type(exc).__name__}: {exc}")
        removed = prune_rolling(self.data_dir, self.keep)
        log.info(
            "backup.rolling.done",
            path=record.path,
            bytes=record.bytes,
            verified=record.verified,
            removed=len(removed),
        )
        return record

    def run(self) -> None:
        """Until stopped: wait for the next due time, then `tick`."""
        # Not a module imported before the daemon's warm-up has imported the package tree:
        # two threads importing it at once were seen to find `imprint.reads` half made.
        while not self._started(1.0):
            if self._stopping.is_set():
                return
        while True:
            due = self.due()
            if due is None:
                return
            if self._wait(min(max(0.0, due - self._clock()), RECHECK_SEC)):
                return  # stopped
            self.tick()

    def start(self) -> RollingBackups:
        if self.every_sec > 0:
            self._thread = threading.Thread(target=self.run, name="imprint-backups", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Stop waiting; a backup under way is given `timeout` to finish (a rolling backup
        killed midway leaves only a `.partial` folder, removed by the next one)."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout)
