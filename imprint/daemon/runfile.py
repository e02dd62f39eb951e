"""What the data dir's owner leaves in `{data_dir}/run`: its run file and its stderr log.

The run file `daemon.json` (0600, written atomically: its pid, its socket, when it started,
which data dir it serves) says who owns the data dir. A pid is believed only when it is this
user's imprint process that started when the file says, so `imprint stop` needs no socket at
all; and the file only when it names this data dir (its resolved path and instance id,
`identity`): a run file copied with its folder (`cp -r`, a file-level backup, a synced
folder) names the original, whose daemon is not this copy's.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from imprint._fs import instance_id, private_dir

__all__ = [
    "KILL_AFTER_SEC",
    "STDERR_LOG_KEEP",
    "STDERR_LOG_MAX_BYTES",
    "STOP_GRACE_SEC",
    "exited",
    "identity",
    "is_our_daemon",
    "proc_start",
    "rotate_log",
    "run_dir",
    "running_daemon",
]

STDERR_LOG_MAX_BYTES = 4 * 1_048_576
STDERR_LOG_KEEP = 2
STOP_GRACE_SEC = 30.0  # after SIGTERM the daemon exits within this, stuck or not
# `imprint stop` sends SIGKILL this long after SIGTERM: the daemon's own watchdog should
# have ended it by then, unless nothing in it could run (its SIGTERM handler is Python).
KILL_AFTER_SEC = STOP_GRACE_SEC + 15.0


def run_dir(data_dir: Path) -> Path:
    return private_dir(data_dir / "run")


def identity(data_dir: Path) -> dict[str, str]:
    """Which data dir a daemon serves: its resolved path and its instance id. The path tells
    a copy from its original (the copy holds the same id); the id tells a data dir made
    again at the same path from the one a daemon still holds open."""
    return {"data_dir": str(data_dir.resolve()), "instance": instance_id(data_dir)}


def proc_start(pid: int) -> str | None:
    """When the process started, in clock ticks since boot (Linux); None elsewhere. With the
    pid it names one process for good: a pid reused later has another start."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat_line.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else None  # field 22 of proc(5), after pid and comm


def exited(pid: int) -> bool:
    """Gone, or a zombie: exited, its parent (the client that spawned it) not yet told."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return False
    return stat_line.rpartition(")")[2].split()[:1] == ["Z"]


def is_our_daemon(pid: int, started: object) -> bool:
    """Whether `pid` is this user's imprint process, the one a run file described."""
    if pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    proc = Path(f"/proc/{pid}")
    if not proc.is_dir():
        return True  # no /proc (macOS): it lives, and may be signalled by us
    try:
        if proc.stat().st_uid != os.getuid():
            return False
        cmdline = (proc / "cmdline").read_bytes()
    except OSError:
        return False
    return b"imprint" in cmdline and (started is None or proc_start(pid) == started)


def running_daemon(data_dir: Path) -> dict[str, Any] | None:
    """The run file of the process that owns the data dir, when that process still runs and
    the file names this data dir (a copied run file names its original's daemon)."""
    try:
        info = json.loads((data_dir / "run" / "daemon.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict) or not isinstance(info.get("pid"), int):
        return None
    # A file without "serves" was written before daemons said which data dir they serve.
    try:
        if "serves" in info and info["serves"] != identity(data_dir):
            return None
    except OSError:
        return None  # no instance id to compare: only this data dir's own socket is tried
    return info if is_our_daemon(info["pid"], info.get("proc_start")) else None


def rotate_log(path: Path, max_bytes: int, keep: int, fd: int | None = None) -> bool:
    """Rotate `path` when it is over `max_bytes`: .1 becomes .2 and so on, `keep` old files.
    With `fd` (a descriptor writing to that file: the daemon's stderr) the size is read
    there, and a fresh file takes its place on `fd`. Whether it rotated."""
    try:
        if fd is not None:
            held, named = os.fstat(fd), os.stat(path)
            if (held.st_dev, held.st_ino) != (named.st_dev, named.st_ino):
                return False  # fd writes elsewhere (a daemon no client spawned, say)
            size = held.st_size
        else:
            size = path.stat().st_size
    except OSError:
        return False
    if size <= max_bytes:
        return False
    for n in range(keep, 0, -1):
        older = path.with_name(f"{path.name}.{n}")
        newer = path if n == 1 else path.with_name(f"{path.name}.{n - 1}")
        with contextlib.suppress(OSError):
            os.replace(newer, older)
    if fd is not None:
        fresh = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.dup2(fresh, fd)
        finally:
            os.close(fresh)
    return True
