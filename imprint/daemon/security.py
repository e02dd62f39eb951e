"""Who may talk to whom over the daemon's socket.

The socket lives in a folder only the user can enter (`$XDG_RUNTIME_DIR/imprint`, else
`{tmp}/imprint-<uid>`), checked on both ends (a real folder, not a symlink, owned by the user,
mode 0700), and each end asks the kernel who the other is (SO_PEERCRED): the daemon serves
only its own user, the bridge talks only to a daemon of its own user.

Finding it: where the socket lives depends on the environment of whoever started the daemon,
so the daemon also writes `{data_dir}/run/daemon.json` (`imprint.daemon.runfile`), and
clients look where it says first, whatever their own XDG_RUNTIME_DIR or TMPDIR.
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import struct
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from imprint.errors import DaemonError

__all__ = ["SUN_PATH_MAX", "check_private", "peer_uid", "socket_dir", "socket_path", "socket_paths"]

SUN_PATH_MAX = 104  # sockaddr_un.sun_path: 108 bytes on Linux, 104 on macOS


def check_private(folder: Path, what: str) -> None:
    """The folder must be a real directory (not a symlink), owned by us, mode 0700."""
    try:
        info = os.lstat(folder)
    except OSError as exc:
        raise DaemonError(f"daemon: cannot use the {what} {folder}: {exc.strerror}") from exc
    uid = os.getuid()
    if stat.S_ISLNK(info.st_mode):
        raise DaemonError(
            f"daemon: the {what} {folder} is a symlink; refusing it (remove it and retry)"
        )
    if not stat.S_ISDIR(info.st_mode):
        raise DaemonError(f"daemon: the {what} {folder} is not a directory; remove it and retry")
    if info.st_uid != uid:
        raise DaemonError(
            f"daemon: the {what} {folder} is owned by uid {info.st_uid}, not you "
            f"(uid {uid}); refusing it (another user may be squatting it)"
        )
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise DaemonError(
            f"daemon: the {what} {folder} has mode {stat.S_IMODE(info.st_mode):04o}; "
            "it must be 0700 (chmod 700 it or remove it)"
        )


def _temp_root() -> str:
    """`tempfile.gettempdir()` without importing tempfile (shutil, random and the
    compressors with it: a tenth of a hook's own time): the first of $TMPDIR, $TEMP, $TMP
    and /tmp that is a folder this user may write, as tempfile would pick it; anything
    else (a tempfile.tempdir set in this process, no such folder) asks tempfile itself.
    Daemon and clients both come here, so they agree on the socket's folder."""
    loaded = sys.modules.get("tempfile")
    if loaded is None or loaded.tempdir is None:
        for name in ("TMPDIR", "TEMP", "TMP"):
            if value := os.environ.get(name):
                break
        else:
            value = "/tmp"
        if os.path.isdir(value) and os.access(value, os.W_OK | os.X_OK):
            return os.path.abspath(value)
    import tempfile

    return tempfile.gettempdir()


def socket_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The user's private folder for daemon sockets, created 0700 and checked.

    `$XDG_RUNTIME_DIR/imprint` when XDG_RUNTIME_DIR is set (that folder is the user's own,
    checked too), else `{tmp}/imprint-<uid>`; anything not owned by the user, not 0700 or a
    symlink is refused with a one-line error instead of being used.
    """
    env = os.environ if environ is None else environ
    uid = os.getuid()
    runtime = env.get("XDG_RUNTIME_DIR", "")
    if runtime:
        base = Path(runtime)
        check_private(base, "runtime folder $XDG_RUNTIME_DIR")
        folder = base / "imprint"
    else:
        folder = Path(_temp_root()) / f"imprint-{uid}"
    with contextlib.suppress(FileExistsError):
        # Not private_dir: an existing folder is checked, never repaired (it may be a trap).
        os.mkdir(folder, 0o700)
    check_private(folder, "socket folder")
    return folder


def _sha256_hex(data: bytes) -> str:
    """hashlib's sha256, from the interpreter's own module where it has one: importing
    hashlib loads OpenSSL's library and reads its config (2-3 ms of every hook and bridge
    start)."""
    import importlib

    for name in ("_sha2", "_sha256"):  # Python 3.12+, 3.11
        with contextlib.suppress(ImportError):
            return str(importlib.import_module(name).sha256(data).hexdigest())
    import hashlib

    return hashlib.sha256(data).hexdigest()


def socket_path(data_dir: Path, environ: Mapping[str, str] | None = None) -> Path:
    """Short and per data dir: Unix socket paths are limited to about 100 bytes."""
    digest = _sha256_hex(str(data_dir.resolve()).encode())[:16]
    path = socket_dir(environ) / f"{digest}.sock"
    if len(os.fsencode(path)) >= SUN_PATH_MAX:
        raise DaemonError(
            f"daemon: socket path {path} is longer than {SUN_PATH_MAX - 1} bytes; "
            "set XDG_RUNTIME_DIR (or TMPDIR) to a shorter folder"
        )
    return path


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end of a Unix socket; None where the platform
    cannot tell (then the private socket folder is the only guard)."""
    if hasattr(socket, "SO_PEERCRED"):  # Linux: struct ucred {pid, uid, gid}
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return int(struct.unpack("3i", creds)[1])
    if hasattr(socket, "LOCAL_PEERCRED"):  # macOS/BSD: struct xucred {version, uid, ...}
        creds = sock.getsockopt(0, socket.LOCAL_PEERCRED, 76)  # sizeof(struct xucred)
        return int(struct.unpack("2I", creds[: struct.calcsize("2I")])[1])
    return None


def socket_paths(data_dir: Path, info: dict[str, Any] | None) -> list[Path]:
    """Where the data dir's owner may listen: where its run file says, then where this
    environment would put it. The named folder is checked as our own is (a real folder,
    ours, 0700), else refused; one that is gone (a tmp cleaner) is skipped: the daemon
    makes it again."""
    paths = []
    named = info.get("socket") if info is not None else None
    if isinstance(named, str) and named:
        path = Path(named)
        if not path.is_absolute() or len(os.fsencode(path)) >= SUN_PATH_MAX:
            raise DaemonError(f"daemon: {data_dir / 'run' / 'daemon.json'} names no usable socket")
        if os.path.lexists(path.parent):
            check_private(path.parent, "socket folder")
            paths.append(path)
    own = socket_path(data_dir)
    if own not in paths:
        paths.append(own)
    return paths
