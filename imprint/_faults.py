"""Failpoints: named places where a test can make this process die with SIGKILL, or stall.

`IMPRINT_FAILPOINT=writer.after_vectors:3` kills the process the third time that point
is reached. `IMPRINT_DELAY=reader.read:5:2` makes the first 2 passes through that point
wait 5 s each (without `:2`, every pass), after logging `fault.delay`, so that a test in
another process knows that a call is in flight there (a reader passes `reader.read`, then
`reader.<message kind>`: `reader.lexical_query` stalls that kind of read alone).
`IMPRINT_HOLD=writer.vectors:60` makes that point block 60 s holding the interpreter lock,
as a Chroma call that hangs inside its Rust code does (nothing else in the process runs
meanwhile, signal handlers included).
Unset (always, outside tests), a failpoint costs one dict lookup.
"""

from __future__ import annotations

import ctypes
import os
import signal
import threading
import time
from collections import Counter

import structlog

__all__ = ["delay", "failpoint", "hold"]

# structlog itself: this module sits below imprint.logs, which configures it at startup.
log = structlog.stdlib.get_logger(__name__)

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


def delay(name: str) -> None:
    spec = os.environ.get("IMPRINT_DELAY")
    if not spec:
        return
    target, _, rest = spec.partition(":")
    if target != name:
        return
    seconds, _, times = rest.partition(":")
    with _lock:
        _hits[f"delay:{name}"] += 1
        if times and _hits[f"delay:{name}"] > int(times):
            return
    log.warning("fault.delay", point=name, seconds=float(seconds))
    time.sleep(float(seconds))  # the stall itself is what the test asked for


def hold(name: str) -> None:
    spec = os.environ.get("IMPRINT_HOLD")
    if not spec:
        return
    target, _, seconds = spec.partition(":")
    if target != name:
        return
    log.warning("fault.hold", point=name, seconds=int(seconds))
    # A PyDLL call keeps the interpreter lock for its whole duration (a CDLL call drops it).
    ctypes.PyDLL(None).sleep(int(seconds))
