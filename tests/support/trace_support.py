"""The actors' trace read back from the JSON log: what reached the readers, and when.

Tests observe reads here instead of spying on store methods: every handled actor message
writes one `actor.message` event (actor, message kind, outcome, request id, recall id and
step), and a read stalled with `IMPRINT_DELAY=reader.<kind>:<seconds>` (imprint/_faults.py)
writes `fault.delay` when it starts. Reads in flight at the same time show up as a second
`fault.delay` logged before the first stalled read's `actor.message`: the log is written in
the order things happen, so reads that ran one after another can never look concurrent.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from imprint.logs import log_path

__all__ = [
    "READERS",
    "LogWatch",
    "events",
    "in_flight_at_once",
    "log_watch",
    "reader_messages",
    "stall",
]

READERS = ("VectorReader", "LexicalReader", "FactReader")


def events(data: Path) -> list[dict[str, Any]]:
    """Every event of the JSON log of `data`, in the order written."""
    path = log_path(data)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def reader_messages(data: Path, **fields: Any) -> list[dict[str, Any]]:
    """The readers' `actor.message` events whose fields have these values."""
    return [
        e
        for e in events(data)
        if e.get("event") == "actor.message"
        and str(e.get("actor", "")).startswith(READERS)
        and all(e.get(k) == v for k, v in fields.items())
    ]


def stall(monkeypatch: pytest.MonkeyPatch, kind: str, seconds: float) -> None:
    """From now on every read of `kind` ("read": every read) waits `seconds` in its reader."""
    monkeypatch.setenv("IMPRINT_DELAY", f"reader.{kind}:{seconds}")


def in_flight_at_once(data: Path, kind: str) -> int:
    """The most reads stalled by `stall(kind)` that were in their readers at one time."""
    point = f"reader.{kind}"
    open_now = most = 0
    for e in events(data):
        if e.get("event") == "fault.delay" and e.get("point") == point:
            open_now += 1
            most = max(most, open_now)
        elif (
            e.get("event") == "actor.message"
            and str(e.get("actor", "")).startswith(READERS)
            and kind in ("read", e.get("message"))
            and open_now
        ):
            open_now -= 1
    return most


def _matches(e: dict[str, Any], event: str, fields: dict[str, Any]) -> bool:
    return e.get("event") == event and all(e.get(k) == v for k, v in fields.items())


class LogWatch(logging.Handler):
    """Sees each structlog event as it is logged, so a test can wait for one (a read that
    is now stalled in its reader) on a condition instead of polling or sleeping."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self._seen: list[dict[str, Any]] = []
        self._changed = threading.Condition()
        self._flags: list[tuple[str, dict[str, Any], threading.Event]] = []

    def emit(self, record: logging.LogRecord) -> None:
        if isinstance(record.msg, dict):
            seen = dict(record.msg)
            with self._changed:
                self._seen.append(seen)
                for event, fields, flag in self._flags:
                    if _matches(seen, event, fields):
                        flag.set()
                self._changed.notify_all()

    def _found(self, event: str, fields: dict[str, Any]) -> dict[str, Any] | None:
        for e in self._seen:
            if _matches(e, event, fields):
                return e
        return None

    def seen(self, event: str, **fields: Any) -> list[dict[str, Any]]:
        """Every `event` with these field values logged so far, in order."""
        with self._changed:
            return [e for e in self._seen if _matches(e, event, fields)]

    def flag(self, event: str, **fields: Any) -> threading.Event:
        """An Event set once `event` with these field values is logged (a gate for a fake
        that must wait until something has happened in another thread)."""
        flag = threading.Event()
        with self._changed:
            self._flags.append((event, fields, flag))
            if self._found(event, fields):
                flag.set()
        return flag

    def wait_for(self, event: str, timeout: float = 30, **fields: Any) -> dict[str, Any]:
        """The first `event` with these field values, once it has been logged."""
        with self._changed:
            found = self._changed.wait_for(lambda: self._found(event, fields), timeout)
        assert found, f"no {event} {fields} within {timeout} s"
        return found


@pytest.fixture
def log_watch() -> Iterator[LogWatch]:
    """A LogWatch on the root logger (structlog's events reach it once logging is
    configured) for the length of one test."""
    watch = LogWatch()
    root = logging.getLogger()
    root.addHandler(watch)
    try:
        yield watch
    finally:
        root.removeHandler(watch)
