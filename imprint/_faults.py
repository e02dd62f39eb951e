"""Failpoints: named places where a test can make this process die with SIGKILL.

`IMPRINT_FAILPOINT=writer.after_vectors:3` kills the process the third time that point
is reached. Unset (always, outside tests), a failpoint costs one dict lookup.
"""

from __future__ import annotations

import os
import signal
import threading
from collections import Counter

__all__ = ["failpoint"]

_hits: Counter[str] = Counter()
_lock = threading.Lock()


def failpoint(name: str) -> None:
    spec = os.environ.get("IMPRINT_FAILPOINT")
    if not spec:
        return
    target, _, nth = spec.partition(":")
    if target != name:
        return
    with _lock:
        _hits[name] += 1
        reached = _hits[name] >= int(nth or "1")
    if reached:
        os.kill(os.getpid(), signal.SIGKILL)
