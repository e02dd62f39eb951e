"""Small file-system helpers: atomic writes and private (owner-only) files and folders.

Everything Imprint creates in the data dir is the user's alone: folders 0700, files 0600,
whatever the umask (other users on the machine must not read memories, logs or tokens).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "DATA_DIR_ENV",
    "DEFAULT_DATA_DIR",
    "PRIVATE_UMASK",
    "atomic_write_lines",
    "atomic_write_text",
    "bounded_lines",
    "data_dir",
    "instance_id",
    "made_dir",
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


def instance_id(data_dir: Path) -> str:
    """The data dir's random id (`{data_dir}/instance_id`), made once by whoever asks first.

    Linked into place, never renamed over: two processes making it at once agree on the
    first one's id (a rename would let the second replace an id the first already used)."""
    path = data_dir / "instance_id"
    with contextlib.suppress(FileNotFoundError):
        return path.read_text(encoding="utf-8").strip()
    private_dir(data_dir)
    import tempfile  # only to write: every hook process reads through this module

    fd, tmp = tempfile.mkstemp(prefix=".instance_id.", dir=data_dir)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(os.urandom(4).hex() + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return path.read_text(encoding="utf-8").strip()


def private_dir(path: Path) -> Path:
    """Create `path` (and missing parents) as 0700; an existing folder is narrowed to 0700."""
    return _make_dir(path, narrow=True)


def made_dir(path: Path) -> Path:
    """Create `path` (and missing parents) as 0700; a folder that already exists keeps its
    mode: it is not Imprint's to narrow (a shared 2775 folder, a 1777 one)."""
    return _make_dir(path, narrow=False)


def _make_dir(path: Path, *, narrow: bool) -> Path:
    missing = []
    probe = path
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    # mkdir's parents get the umask's mode, not 0700; `path` itself only when narrowing.
    for folder in [path, *missing] if narrow else missing:
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


def atomic_write_lines(path: Path, lines: Iterable[str], narrow: bool = True) -> int:
    """`atomic_write_text` of text given a piece at a time (never all held at once); how
    many pieces were written. The folder is made private (`private_dir`), or with
    `narrow=False` (a folder outside the data dir) only the folders it makes are."""
    (private_dir if narrow else made_dir)(path.parent)
    import tempfile

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


# How much of a line is read at a time while its length is not yet known.
_PIECE = 1 << 20


def bounded_lines(handle: BinaryIO, max_bytes: int) -> Iterator[bytes | None]:
    """Each line of a regular file's `handle` (its line end kept; the last one may lack it),
    or None for a line longer than `max_bytes` (its line end not counted). A line longer
    than a piece is measured first, a piece at a time, and read whole only when it fits: a
    line too long is skipped without ever being held."""
    while first := handle.readline(_PIECE):
        if first.endswith(b"\n") or len(first) < _PIECE:  # a short line, or the file's end
            yield first
            continue
        start = handle.tell() - len(first)
        size, ended = len(first), False
        while size <= max_bytes and (piece := handle.readline(_PIECE)):
            size += len(piece)
            if ended := piece.endswith(b"\n"):
                break
        if size - ended > max_bytes:
            while not ended and (piece := handle.readline(_PIECE)):
                ended = piece.endswith(b"\n")
            yield None
            continue
        handle.seek(start)
        yield handle.read(size)
