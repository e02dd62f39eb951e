"""The daemon's capture worker: one thread that drains the capture queue in the background.

It drains once the runtime is up (what a killed daemon left, and what hooks queued while
none ran), then each time a hook pokes it (`poke`), and every POLL_SEC besides. Events of
one session are captured once per drain (the last one: each reads to the transcript's end).
A capture that fails is queued again, at most MAX_ATTEMPTS times in all, and counted
per client in `<data dir>/capture/clients.json` (`imprint.hooklib.queue.client_stats`) for
`status` to show.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from imprint._fs import atomic_write_text
from imprint.errors import failure_line
from imprint.hooklib.queue import Taken, client_stats, done, enqueue, stats_file, take
from imprint.logs import get_logger
from imprint.redact import redact

if TYPE_CHECKING:
    from imprint.actors.lifecycle import Runtime

__all__ = ["CaptureWorker"]

log = get_logger("imprint.capture")

POLL_SEC = 60.0
MAX_ATTEMPTS = 3


class CaptureWorker:
    """Drains the data dir's capture queue in a thread of its own."""

    def __init__(self, data_dir: Path, wait_runtime: Callable[[float | None], Runtime]) -> None:
        self.data_dir = data_dir
        self._wait_runtime = wait_runtime
        self._poked = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.drains = 0  # drains finished: tests wait on this moving
        self._runtime: Runtime | None = None

    def start(self) -> CaptureWorker:
        self._thread = threading.Thread(target=self._run, name="imprint-capture", daemon=True)
        self._thread.start()
        return self

    def poke(self) -> None:
        """A hook queued an event: drain now."""
        self._poked.set()

    def stop(self, timeout: float = 30.0) -> None:
        """Let the capture under way finish (what is still queued stays for the next daemon)."""
        self._stopping.set()
        self._poked.set()
        if self._runtime is not None:
            self._runtime.priority.wake()  # a turn waiting for a recall looks at `stopping`
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                log.error("capture.worker.stuck", timeout_sec=timeout)

    def _run(self) -> None:
        try:
            runtime = self._wait_runtime(None)
        except Exception as exc:
            log.warning("capture.worker.no_runtime", error=failure_line(exc) or type(exc).__name__)
            return
        from imprint.writes.gateway import Writes

        self._runtime = runtime
        writes = Writes(runtime)
        while not self._stopping.is_set():
            self._poked.clear()
            try:
                self.drain(writes)
            except Exception as exc:  # the queue itself unreadable (a full disk): next time
                log.error("capture.drain.failed", error=failure_line(exc) or type(exc).__name__)
            self._poked.wait(POLL_SEC)

    def drain(self, writes: Any) -> int:
        """Capture every queued session once; how many sessions were captured."""
        from imprint.capture.session import capture

        taken = take(self.data_dir)
        latest: dict[str, dict[str, str]] = {}
        for typed in taken.events:
            event = typed.as_dict()
            latest.pop(event.get("session_id", ""), None)  # keeps the order of the last
            latest[event.get("session_id", "")] = event
        captured = 0
        for event in latest.values():
            if self._stopping.is_set():
                return captured  # the taken file stays: the next daemon takes it again
            client = event.get("client", "claude-code")
            # A recall in flight goes first: capture's reads, redaction and embedding wait.
            writes.runtime.priority.turn("capture", self._stopping)
            started = time.monotonic()
            session = event.get("session_id", "")
            try:
                turns, skipped, excluded = capture(writes, self.data_dir, event)
            except Exception as exc:
                self._failed(event, client, exc)
                continue
            if excluded:
                log.info("capture.excluded", client=client, session=session)
                continue
            captured += 1
            for line in skipped:
                log.warning("capture.skipped", client=client, session=session, what=line)
            last_skip = f"session {session}: {skipped[-1]}" if skipped else ""
            self._count(client, turns=turns, skipped=len(skipped), last_skip=last_skip)
            log.info(
                "capture.done",
                client=client,
                session=session,
                turns=turns,
                skipped=len(skipped),
                elapsed_ms=round((time.monotonic() - started) * 1000),
            )
        self._finish(taken)
        return captured

    def _finish(self, taken: Taken) -> None:
        done(taken)
        self.drains += 1

    def _failed(self, event: dict[str, str], client: str, exc: Exception) -> None:
        line = redact(failure_line(exc) or f"{type(exc).__name__}: {exc}")[:300]
        attempts = int(event.get("attempts", "0") or 0) + 1
        log.warning(
            "capture.failed", client=client, session=event.get("session_id", ""),
            attempts=attempts, error=line,
        )  # fmt: skip
        self._count(client, error=line)
        if attempts < MAX_ATTEMPTS:
            enqueue(self.data_dir, {**event, "attempts": str(attempts)})

    def _count(
        self, client: str, *, turns: int = 0, error: str = "", skipped: int = 0, last_skip: str = ""
    ) -> None:
        stats = client_stats(self.data_dir)
        row = stats.setdefault(client, {"captures": 0, "turns": 0, "failures": 0})
        now = time.time()
        if skipped:
            row["skipped"] = int(row.get("skipped", 0)) + skipped
            row["last_skip_at"] = now
            row["last_skip"] = last_skip[:300]
        if error:
            row["failures"] = int(row.get("failures", 0)) + 1
            row["last_failure_at"] = now
            row["last_error"] = error
        else:
            row["captures"] = int(row.get("captures", 0)) + 1
            row["turns"] = int(row.get("turns", 0)) + turns
            row["last_capture_at"] = now
        atomic_write_text(stats_file(self.data_dir), json.dumps(stats, indent=1))
