"""Failpoints: named places where a test can make this process die with SIGKILL, fail,
stall, or hold the interpreter lock.

Each is armed by one environment variable naming one point, `point[:field...]`:
`IMPRINT_FAILPOINT=writer.after_vectors:3` kills the process the third time that point
is reached. `IMPRINT_FAIL=search.rows:2` raises the second time that point is reached
(without `:2`, every time): a RuntimeError, or the error the point names (the one that
place meets in practice, `sqlite3.OperationalError` for a merge on a full disk, `DiskFull`
for a hook's write), saying `failpoint <point>`. `IMPRINT_DELAY=reader.read:5:2` makes the
first 2 passes through that point wait 5 s each (without `:2`, every pass), after logging
`fault.delay`, so that a test in another process knows that a call is in flight there (a
reader passes `reader.read`, then `reader.<message kind>`: `reader.lexical_query` stalls
that kind of read alone); a delay of 0 s only logs each pass, so a test can count them.
`IMPRINT_HOLD=writer.vectors:60` makes that point block 60 s holding the interpreter lock,
as a Chroma call that hangs inside its Rust code does (nothing else in the process runs
meanwhile, signal handlers included).
Unset (always, outside tests), a failpoint costs one dict lookup.
"""

from __future__ import annotations

import errno
import os
import signal
import threading
import time
from collections import Counter
from typing import Any

__all__ = ["DiskFull", "delay", "fail", "failpoint", "hold", "reset"]


class DiskFull(OSError):
    """What a write meets on a full disk (ENOSPC), for `fail(point, DiskFull)`."""

    def __init__(self, message: str) -> None:
        super().__init__(errno.ENOSPC, f"{os.strerror(errno.ENOSPC)} ({message})")


def _log() -> Any:
    """structlog itself, imported at a delay's or hold's first log: this module sits below
    imprint.logs (which configures it at startup), and a hook process reaches `fail`
    without any third-party import."""
    import structlog

    return structlog.stdlib.get_logger(__name__)


_hits: Counter[str] = Counter()
_lock = threading.Lock()


def _armed(var: str, name: str) -> list[str] | None:
    """The fields after the point in `var` (`name:5:2` gives ["5", "2"]) when `var` arms
    the point `name`; None when it is unset or arms another point."""
    spec = os.environ.get(var)
    if not spec:
        return None
    target, *fields = spec.split(":")
    return fields if target == name else None


def _passes(var: str, name: str) -> int:
    """How many times the point `name` armed by `var` has been reached, this one included."""
    with _lock:
        _hits[f"{var}:{name}"] += 1
        return _hits[f"{var}:{name}"]


def reset() -> None:
    """Forget how often each point was reached (a test process arms the same point again)."""
    with _lock:
        _hits.clear()


def failpoint(name: str) -> None:
    fields = _armed("IMPRINT_FAILPOINT", name)
    if fields is None:
        return
    if _passes("IMPRINT_FAILPOINT", name) >= int(fields[0] if fields else "1"):
        os.kill(os.getpid(), signal.SIGKILL)


def fail(name: str, error: type[Exception] = RuntimeError) -> None:
    fields = _armed("IMPRINT_FAIL", name)
    if fields is None:
        return
    reached = _passes("IMPRINT_FAIL", name)
    if not fields or reached == int(fields[0]):
        raise error(f"failpoint {name}")


def delay(name: str) -> None:
    fields = _armed("IMPRINT_DELAY", name)
    if fields is None:
        return
    seconds = float(fields[0])
    reached = _passes("IMPRINT_DELAY", name)
    if len(fields) > 1 and reached > int(fields[1]):
        return
    _log().warning("fault.delay", point=name, seconds=seconds)
    time.sleep(seconds)  # the stall itself is what the test asked for


def hold(name: str) -> None:
    fields = _armed("IMPRINT_HOLD", name)
    if fields is None:
        return
    seconds = int(fields[0])
    _log().warning("fault.hold", point=name, seconds=seconds)
    import ctypes

    # A PyDLL call keeps the interpreter lock for its whole duration (a CDLL call drops it).
    ctypes.PyDLL(None).sleep(seconds)
