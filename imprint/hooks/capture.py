"""The capture hand-off: what `imprint hook stop|pre-compact|session-end` does.

The event is appended to the durable capture queue (`imprint.hooklib.queue`: fsynced before
this returns) and the daemon is poked (started if none runs) without waiting for it: the
daemon captures in the background, and the hook's process exits at once. The standard
library only, so the whole hand-off stays well under 100 ms.
"""

from __future__ import annotations

import contextlib
from typing import Any

__all__ = ["hand_off"]


def hand_off(event: dict[str, Any]) -> None:
    """Queue a capture of the event's session and poke the daemon; returns at once.

    `event`: the hook's input (`session_id`, `transcript_path`, `cwd`, `hook_event_name`),
    with `client` set by the dispatcher (default `claude-code`). Raises OSError when the
    queue cannot be written (a full disk); a daemon that cannot be reached now is no error:
    the event waits in the queue for the next one."""
    from imprint._fs import data_dir
    from imprint.hooklib.queue import enqueue

    folder = data_dir()
    enqueue(folder, {"client": "claude-code", **event})
    from imprint.daemon.client import poke_capture

    with contextlib.suppress(Exception):
        poke_capture(folder)
