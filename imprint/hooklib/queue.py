"""The durable capture queue: `<data dir>/capture/queue.jsonl`, one event a line.

A hook appends (`enqueue`: a locked, fsynced append to a 0600 file, the standard library
only, well under a millisecond); the daemon takes the whole file at once (`take`: renamed
under the same lock to `taken-<ns>.jsonl`, so appends go on to a fresh file) and deletes
what it took only once every event in it is captured (`done`). A daemon killed mid-capture
leaves the taken file, and the next one takes it again first: nothing handed over is lost,
and capturing from a session's saved offset with stable record ids captures nothing twice.

An event holds only where to read (client, session id, transcript path, cwd, the hook's
name), never conversation text: nothing here needs redacting.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from imprint._faults import DiskFull, fail
from imprint._fs import private_dir

__all__ = [
    "EVENT_KEYS",
    "CaptureEvent",
    "Taken",
    "capture_dir",
    "client_stats",
    "done",
    "enqueue",
    "stats_file",
    "take",
    "waiting",
]

# What an event keeps of a hook's input (the rest, a prompt or a message, is not needed).
EVENT_KEYS = ("client", "session_id", "transcript_path", "cwd", "hook_event_name", "attempts")
MAX_LINE_BYTES = 16 * 1024


class CaptureEvent(NamedTuple):
    """One queued capture: where to read (EVENT_KEYS) and when it was queued, each a string
    or None where the hook gave none (a None is left out of the line, as it always was)."""

    client: str | None = None
    session_id: str | None = None
    transcript_path: str | None = None
    cwd: str | None = None
    hook_event_name: str | None = None
    attempts: str | None = None
    queued_at: str | None = None

    @classmethod
    def of(cls, hook_input: Mapping[str, Any]) -> CaptureEvent:
        """What an event keeps of a hook's input: its EVENT_KEYS given as strings or ints."""
        kept = {
            k: str(hook_input[k]) for k in EVENT_KEYS if isinstance(hook_input.get(k), str | int)
        }
        return cls(**kept)

    @classmethod
    def read(cls, raw: bytes) -> CaptureEvent | None:
        """A queue line (this version's or an older one's: any value taken as its string,
        unknown keys passed over); None for a line that is not a JSON object."""
        try:
            found = json.loads(raw)
        except ValueError:
            return None
        if not isinstance(found, dict):
            return None
        return cls(**{str(k): str(v) for k, v in found.items() if k in cls._fields})

    def queued(self) -> CaptureEvent:
        """This event stamped with the time it is queued now."""
        return self._replace(queued_at=repr(time.time()))

    def as_dict(self) -> dict[str, str]:
        """The fields given, by name, in the order of the line."""
        return {k: v for k, v in self._asdict().items() if v is not None}

    def line(self) -> bytes:
        return (json.dumps(self.as_dict(), ensure_ascii=True) + "\n").encode()


def capture_dir(data_dir: Path) -> Path:
    return private_dir(data_dir / "capture")


def stats_file(data_dir: Path) -> Path:
    """What the daemon's capture worker counts per client (`client_stats`)."""
    return capture_dir(data_dir) / "clients.json"


def client_stats(data_dir: Path) -> dict[str, dict[str, Any]]:
    """Per client: captures, turns, failures, when the last capture and the last failure
    were, and the last failure's line (redacted); `skipped`, with `last_skip` and
    `last_skip_at`, counts what captures passed over (a line or turn too long to read)."""
    path = stats_file(data_dir)
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _queue_file(data_dir: Path) -> Path:
    return capture_dir(data_dir) / "queue.jsonl"


def enqueue(data_dir: Path, event: CaptureEvent | Mapping[str, Any]) -> None:
    """Append the event (a hook's input: what `CaptureEvent.of` keeps of it) durably,
    stamped with the time: written, fsynced, then returned. Raises OSError where the disk
    refuses it."""
    typed = event if isinstance(event, CaptureEvent) else CaptureEvent.of(event)
    line = typed.queued().line()
    if len(line) > MAX_LINE_BYTES:
        raise OSError("capture event too long")
    path = _queue_file(data_dir)
    while True:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            # `take` renames the file under this lock: one opened before that is the taken
            # file now, so append to the new one instead.
            try:
                same = os.fstat(fd).st_ino == os.stat(path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                fail("disk.full", DiskFull)
                fresh = os.fstat(fd).st_size == 0
                os.write(fd, line)
                os.fsync(fd)
                if fresh:
                    _sync_dir(path.parent)  # the new file's name, too, survives a crash
                return
        finally:
            os.close(fd)


class Taken:
    """Events taken from the queue, in order, and the files they came from."""

    def __init__(self, events: list[CaptureEvent], files: list[Path]) -> None:
        self.events = events
        self.files = files


def take(data_dir: Path) -> Taken:
    """Every queued event: first those a killed daemon had taken, then the queue's own."""
    folder = capture_dir(data_dir)
    path = _queue_file(data_dir)
    if path.exists() and path.stat().st_size:
        fd = os.open(path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.replace(path, folder / f"taken-{time.time_ns()}.jsonl")
        finally:
            os.close(fd)
    files = sorted(folder.glob("taken-*.jsonl"))
    events: list[CaptureEvent] = []
    for file in files:
        for raw in file.read_bytes().splitlines():
            if (event := CaptureEvent.read(raw)) is not None:
                events.append(event)
    return Taken(events, files)


def done(taken: Taken) -> None:
    """Every event of `taken` is captured (or given up on): forget them."""
    for file in taken.files:
        file.unlink(missing_ok=True)
    if taken.files:
        _sync_dir(taken.files[0].parent)  # a taken file must not come back


def waiting(data_dir: Path) -> tuple[int, float | None]:
    """How many events wait to be captured (the queue's and those a daemon took but did
    not finish) and when the oldest of them was queued (None when none waits). Reads only."""
    folder = data_dir / "capture"
    count, oldest = 0, None
    for file in [folder / "queue.jsonl", *sorted(folder.glob("taken-*.jsonl"))]:
        try:
            lines = file.read_bytes().splitlines()
        except OSError:
            continue
        for raw in lines:
            with contextlib.suppress(ValueError, TypeError, AttributeError):
                at = float(json.loads(raw).get("queued_at"))
                count += 1
                oldest = at if oldest is None else min(oldest, at)
    return count, oldest


def _sync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
