"""What every hook run leaves behind for `imprint hooks status`: per client and event, how
many runs and failures, when it last ran, last succeeded and last failed, and why.

One small JSON file in the data dir (`hooks/state.json`, 0600), updated under a lock by each
hook process. The standard library only: this runs in every hook process.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from imprint._faults import DiskFull, fail

__all__ = ["read_state", "record_run", "state_path"]

_in_process = threading.Lock()  # flock does not exclude a second descriptor of this process
MAX_ERROR_CHARS = 300
_BLOCK = 4096


def state_path(data_dir: Path) -> Path:
    return data_dir / "hooks" / "state.json"


def read_state(data_dir: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """client -> event -> its counts and times; empty when no hook has run."""
    try:
        data = json.loads(state_path(data_dir).read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    clients = data.get("clients") if isinstance(data, dict) else None
    return clients if isinstance(clients, dict) else {}


def _write(path: Path, text: str) -> None:
    """Atomic (a reader sees the old file or the new one) but not fsynced: a hook's
    bookkeeping is not worth a disk flush inside its time budget.

    The file is padded with spaces to whole blocks, so that on a full disk (where the new
    file cannot be written) the counts still go in place, into the blocks the file holds
    already: a hook that fails for want of space is still counted and shown."""
    data = text.encode("utf-8")
    data += b" " * (-len(data) % _BLOCK)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            fail("disk.full", DiskFull)
            _write_all(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        _write_in_place(path, data)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _write_in_place(path: Path, data: bytes) -> None:
    """Over the old file's own blocks (no new ones): what a full disk still allows. Not
    atomic; record_run's lock keeps other hooks out, and a reader that meets a torn file
    reads no counts for that moment."""
    fd = os.open(path, os.O_WRONLY)
    try:
        size = os.fstat(fd).st_size
        if len(data) > size:
            raise OSError(errno.ENOSPC, "no room for the hook counts on a full disk")
        _write_all(fd, data + b" " * (size - len(data)))
    finally:
        os.close(fd)


def record_run(
    data_dir: Path,
    client: str,
    event: str,
    *,
    error: str = "",
    elapsed_ms: int = 0,
    now: float | None = None,
) -> None:
    """Count one run of `client`'s `event` hook (a failure when `error` is given), at `now`
    (the clock's time when not given). Never raises: a hook whose bookkeeping fails still
    exits quietly."""
    now = time.time() if now is None else now
    path = state_path(data_dir)
    with contextlib.suppress(OSError, ValueError), _in_process:
        folder = path.parent
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        lock_fd = os.open(folder / "state.lock", os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
            clients = read_state(data_dir)
            row = clients.setdefault(client, {}).setdefault(event, {})
            row["runs"] = int(row.get("runs", 0)) + 1
            row["last_run"] = now
            row["last_ms"] = elapsed_ms
            if error:
                row["failures"] = int(row.get("failures", 0)) + 1
                row["last_failure"] = now
                row["last_error"] = " ".join(error.split())[:MAX_ERROR_CHARS]
            else:
                row["last_ok"] = now
            _write(path, json.dumps({"clients": clients}, indent=1, sort_keys=True))
        finally:
            os.close(lock_fd)
