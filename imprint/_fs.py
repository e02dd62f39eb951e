"""Small file-system helpers: atomic writes and private (owner-only) files and folders.

Everything Imprint creates in the data dir is the user's alone: folders 0700, files 0600,
whatever the umask (other users on the machine must not read memories, logs or tokens).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

__all__ = [
    "DATA_DIR_ENV",
    "DEFAULT_DATA_DIR",
    "PRIVATE_UMASK",
    "atomic_write_lines",
    "atomic_write_text",
    "data_dir",
    "private_dir",
    "private_file",
    "read_regular",
    "read_utf8",
]

DEFAULT_DATA_DIR = Path("~/.local/share/imprint")
DATA_DIR_ENV = "IMPRINT_DATA_DIR"

# The owner process (daemon, `serve --http`, in-process CLI commands) runs under this umask, so
# files that libraries create for us (SQLite's -wal/-shm, Chroma's segments) are private too.
PRIVATE_UMASK = 0o077


def data_dir(environ: Mapping[str, str] | None = None) -> Path:
    """`IMPRINT_DATA_DIR`, else ~/.local/share/imprint. Here, not in config, so the stdio
    bridge finds its daemon without importing the config schema (pydantic)."""
    env = os.environ if environ is None else environ
    raw = env.get(DATA_DIR_ENV, "")
    return Path(raw).expanduser() if raw else DEFAULT_DATA_DIR.expanduser()


def private_dir(path: Path) -> Path:
    """Create `path` (and missing parents) as 0700; an existing folder is narrowed to 0700."""
    missing = []
    probe = path
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    for folder in [path, *missing]:
        with contextlib.suppress(OSError):
            if folder.stat().st_mode & 0o077:
                os.chmod(folder, 0o700)
    return path


def private_file(path: Path) -> Path:
    """Create `path` empty as 0600 if missing; an existing file is narrowed to 0600."""
    private_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    return path


def atomic_write_text(path: Path, text: str) -> None:
    """Write to a temporary file beside `path`, fsync it, then rename over `path`.

    A reader sees the old file or the new one, never a half-written one, even if the
    process dies mid-write. The file is 0600 (mkstemp's mode).
    """
    atomic_write_lines(path, [text])


def atomic_write_lines(path: Path, lines: Iterable[str]) -> int:
    """`atomic_write_text` of text given a piece at a time (never all held at once); how
    many pieces were written."""
    private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    count = 0
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            for count, line in enumerate(lines, 1):  # noqa: B007 (returned)
                handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return count


def read_regular(file: Path, max_bytes: int) -> bytes | None:
    """At most `max_bytes` of a regular file, or None (too big, not a regular file, a
    symlink in the last component, unreadable). Never blocks on a FIFO or device."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(file, flags)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
            return None
        pieces = []
        left = max_bytes + 1
        while left > 0:
            piece = os.read(fd, min(left, 1 << 20))
            if not piece:
                break
            pieces.append(piece)
            left -= len(piece)
        data = b"".join(pieces)
    except OSError:
        return None
    finally:
        os.close(fd)
    return None if len(data) > max_bytes else data


def read_utf8(file: Path, max_bytes: int) -> str | None:
    """The file's text, or None for a binary, oversized, unreadable or irregular file."""
    data = read_regular(file, max_bytes)
    if data is None:
        return None
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None
