"""The owning process (the daemon, `serve --http`) always stops on SIGTERM.

Two ways a stop was seen to hang, and what answers each:

- Chroma's embedded client keeps the interpreter lock inside its Rust calls. One that
  blocks (seen after a disk-full error: the writer inside `_upsert` for good) stops every
  thread, the SIGTERM handler included, since that handler is Python. While a thread is
  inside such a call (`sigterm_kills()`), SIGTERM has the kernel's default action, so it
  ends the process at once, as SIGKILL would. That loses nothing acknowledged: the write in
  flight was not acknowledged, it is in the journal, and the next start finishes it.
- A shutdown that waits for ever on something: `exit_after(grace)`, called at SIGTERM, has
  faulthandler's watchdog (a C thread that needs no interpreter lock) write every thread's
  stack to stderr and exit after `grace` seconds.

Off until `enable()` (one process-wide switch, flipped by the owning process's entry point):
a library call or a test in another process changes no signal disposition.
"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import signal
import sys
import threading
from collections.abc import Iterator

__all__ = ["enable", "exit_after", "sigterm_kills"]

# struct sigaction is 152 bytes on glibc x86-64 and smaller elsewhere; it is only saved and
# restored whole here, never read, so a larger zeroed buffer serves every libc. All zero
# bytes are SIG_DFL with an empty mask and no flags.
_SIGACTION_BYTES = 512

_lock = threading.Lock()
_libc: ctypes.CDLL | None = None
_inside = 0  # threads now inside a `sigterm_kills` block
_saved = ctypes.create_string_buffer(_SIGACTION_BYTES)


def enable() -> bool:
    """Let `sigterm_kills` act in this process; False where libc's sigaction is not at hand
    (then SIGTERM is handled as before: by the process's own handler)."""
    global _libc
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.sigaction.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    except (OSError, AttributeError):
        return False
    _libc = libc
    return True


_Buffer = ctypes.Array[ctypes.c_char]


def _sigaction(new: _Buffer | None, old: _Buffer | None) -> bool:
    assert _libc is not None
    return bool(_libc.sigaction(int(signal.SIGTERM), new, old) == 0)


@contextlib.contextmanager
def sigterm_kills() -> Iterator[None]:
    """Within the block SIGTERM ends the process at once (the kernel's default), whatever
    holds the interpreter lock; the process's own handler is back after it. Nested and
    concurrent blocks (a writer per workspace) share one saved handler."""
    if _libc is None:
        yield
        return
    global _inside
    with _lock:
        # The first one in saves the process's handler and puts the default in its place.
        entered = _inside > 0 or _sigaction(ctypes.create_string_buffer(_SIGACTION_BYTES), _saved)
        if entered:
            _inside += 1
    try:
        yield
    finally:
        if entered:
            with _lock:
                _inside -= 1
                if _inside == 0:
                    _sigaction(_saved, None)


def exit_after(grace_sec: float) -> None:
    """Exit the process `grace_sec` from now unless it has exited by then, after writing
    every thread's stack to stderr (the daemon's log), whatever holds the interpreter lock."""
    with contextlib.suppress(ValueError, OSError, AttributeError, RuntimeError):
        faulthandler.dump_traceback_later(grace_sec, exit=True, file=sys.stderr)
