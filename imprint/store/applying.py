"""Records a writer is applying right now: in Chroma already, not yet in SQLite.

The writer upserts a batch's vectors first and its records second (`WriterActor._apply`).
A search that runs in between finds the new vectors and no records for them; that is not
the damage its `warning: N results had no record` reports (a lexical side that lost
records), and during a watch batch it came up on most searches. The writer marks the ids
it is applying here, per workspace folder; a search leaves them out of its count, and
says nothing when an apply finished while it ran (its records may have been read just
before they were committed). A real disagreement shows on the next search.

In-process only: one daemon holds a workspace's writer and its readers.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["applied_count", "applying", "being_applied"]

_LOCK = threading.Lock()
_IDS: dict[str, Counter[str]] = {}
_DONE: dict[str, int] = {}


@contextmanager
def applying(folder: Path, ids: Iterable[str]) -> Iterator[None]:
    """Mark `ids` of the workspace at `folder` as being applied until the block ends."""
    key, marked = str(folder), list(ids)
    with _LOCK:
        _IDS.setdefault(key, Counter()).update(marked)
    try:
        yield
    finally:
        with _LOCK:
            held = _IDS[key]
            held.subtract(marked)
            for rid in marked:
                if held[rid] <= 0:
                    del held[rid]
            _DONE[key] = _DONE.get(key, 0) + 1


def being_applied(folder: Path, ids: Iterable[str]) -> set[str]:
    """Which of `ids` a writer of the workspace at `folder` is applying now."""
    with _LOCK:
        held = _IDS.get(str(folder)) or Counter()
        return {rid for rid in ids if rid in held}


def applied_count(folder: Path) -> int:
    """How many applies have finished on the workspace at `folder` (in this process)."""
    with _LOCK:
        return _DONE.get(str(folder), 0)
