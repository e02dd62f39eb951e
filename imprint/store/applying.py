"""Records a writer is applying right now: in Chroma already, not yet in SQLite.

The writer upserts a batch's vectors first and its records second (`WriterActor._apply`).
A search that runs in between finds the new vectors and no records for them; that is not
the damage its `warning: N results had no record` reports (a lexical side that lost
records), and during a watch batch it came up on most searches. The writer marks the ids
it is applying in an `Applying`, per workspace; a search leaves them out of its count, and
says nothing when an apply finished while it ran (its records may have been read just
before they were committed). A real disagreement shows on the next search.

One `Applying` per `Runtime` (`Runtime.applying`), handed to each workspace's writer when
it starts and read by searches through `Reads.applying`: the state crosses the actor
boundary in one object both sides are given, never in module globals.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

__all__ = ["Applying"]


class Applying:
    """The ids each workspace's writer is applying now, and how many applies have ended."""

    def __init__(self) -> None:
        # Writers mark from their actor threads while searches read from theirs.
        self._lock = threading.Lock()
        self._ids: dict[str, Counter[str]] = {}
        self._done: dict[str, int] = {}

    @contextmanager
    def applying(self, workspace: str, ids: Iterable[str]) -> Iterator[None]:
        """Mark `ids` of `workspace` as being applied until the block ends."""
        marked = list(ids)
        with self._lock:
            self._ids.setdefault(workspace, Counter()).update(marked)
        try:
            yield
        finally:
            with self._lock:
                held = self._ids[workspace]
                held.subtract(marked)
                for rid in marked:
                    if held[rid] <= 0:
                        del held[rid]
                self._done[workspace] = self._done.get(workspace, 0) + 1

    def being_applied(self, workspace: str, ids: Iterable[str]) -> set[str]:
        """Which of `ids` the writer of `workspace` is applying now."""
        with self._lock:
            held = self._ids.get(workspace) or Counter()
            return {rid for rid in ids if rid in held}

    def applied_count(self, workspace: str) -> int:
        """How many applies have ended on `workspace`."""
        with self._lock:
            return self._done.get(workspace, 0)
