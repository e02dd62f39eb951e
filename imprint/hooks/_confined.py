"""A client's configuration file, read and written without leaving the scope being edited.

A project's folder is not to be trusted: a repository (or another user who can write a
shared folder) can plant a symbolic link where a client's configuration goes, or where a
temporary or backup file would go, to make an install write the user's own files (a shell
profile, the global settings) or copy them (an account file with a key) into the project.
So `imprint hooks install|uninstall` reach every file through this module only:

- The scope's root is the project's folder (project scope) or the home (user scope;
  `$CODEX_HOME` for Codex's). Every symbolic link on the way to a file, below the root, is
  followed only when it is yours (or root's) and the file it leads to stays inside the root;
  any other is refused with a line naming it, and the install writes nothing. So a dotfiles
  link (`~/.claude/settings.json -> ~/dotfiles/claude/settings.json`) is written through:
  the link stays, its target is edited and backed up beside itself, as a user who keeps
  their configuration in a repository expects; a link out of the home is refused.
- The path the checks resolved is then opened one folder at a time from the root, each with
  O_NOFOLLOW: a link swapped in after the checks fails the open instead of being followed.
- A file that is not a regular file, or that has a second name (a hard link, which would
  carry another file's bytes into the project, and which a rename would split), is refused.
- A temporary or backup file is created exclusively (O_CREAT | O_EXCL | O_NOFOLLOW) under a
  name nobody can take first (random, or the next free one), never opened by an old name;
  the new file takes the old one's mode through its own descriptor (fchmod), and replaces
  it by rename, which moves no link's target.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from imprint._faults import DiskFull, fail
from imprint.errors import InputError

__all__ = ["MAX_CONFIG_BYTES", "ConfigFile", "Pending", "confined", "write_all"]

MAX_CONFIG_BYTES = 64 << 20  # a client's configuration file; ~/.claude.json grows to megabytes
_MAX_LINKS = 40  # as the kernel's own limit on links in one path (ELOOP)
_BACKUPS = 100  # names tried for one backup within a second
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_UNCHANGED = "nothing was written"


@dataclass(frozen=True)
class ConfigFile:
    """One configuration file: as the client names it, where it really is, and what it
    held when it was read."""

    shown: Path  # the client's path
    real: Path  # where the bytes are, under the root with every link resolved
    root: Path  # the scope's folder, links resolved
    linked: bool  # `real` is the target of your link (written through)
    data: bytes | None  # None: no such file yet
    mode: int  # its permission bits (0 when new)
    times: tuple[int, int]  # atime, mtime in ns, for the backup

    @property
    def text(self) -> str | None:
        if self.data is None:
            return None
        try:
            return self.data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"{self.shown}: not UTF-8 ({exc}); {_UNCHANGED}") from exc


def _trusted_owner(uid: int) -> bool:
    return uid in (os.geteuid(), 0)


def _resolved(path: Path, shown: Path) -> Path:
    """`path` with each of its links resolved, each checked to be yours (or root's); the
    caller checks that the end is inside the root."""
    parts = list(path.parts[1:])
    done = Path(path.anchor)
    hops = 0
    while parts:
        part = parts.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            done = done.parent
            continue
        probe = done / part
        try:
            info = os.lstat(probe)
        except FileNotFoundError:
            return Path(os.path.normpath(probe.joinpath(*parts)))
        except OSError as exc:
            raise InputError(f"{shown}: cannot be reached ({exc.strerror}); {_UNCHANGED}") from exc
        if not stat.S_ISLNK(info.st_mode):
            done = probe
            continue
        if not _trusted_owner(info.st_uid):
            raise InputError(
                f"{shown}: {probe} is a symbolic link owned by uid {info.st_uid}, not by you; "
                f"{_UNCHANGED} (remove the link, then run again)"
            )
        hops += 1
        if hops > _MAX_LINKS:
            raise InputError(f"{shown}: too many symbolic links (a loop?); {_UNCHANGED}")
        target = Path(os.readlink(probe))
        if target.is_absolute():
            done = Path(target.anchor)
            parts = [*target.parts[1:], *parts]
        else:
            parts = [*target.parts, *parts]
    return done


def _walk(root: Path, folders: Sequence[str], made: list[Path] | None) -> int:
    """A descriptor of root/folders, opened a folder at a time without following a link;
    missing folders are made when `made` collects them, else FileNotFoundError."""
    if made is not None:
        root.mkdir(parents=True, exist_ok=True)  # the home or project, as the caller named it
    fd = os.open(root, _DIR)
    here = root
    try:
        for name in folders:
            here = here / name
            try:
                inner = os.open(name, _DIR, dir_fd=fd)
            except FileNotFoundError:
                if made is None:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o777, dir_fd=fd)
                    made.append(here)
                inner = os.open(name, _DIR, dir_fd=fd)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def _folder(file: ConfigFile, made: list[Path] | None = None) -> Iterator[int]:
    rel = file.real.relative_to(file.root)
    try:
        fd = _walk(file.root, rel.parts[:-1], made)
    except OSError as exc:
        raise _changed(file, exc) from exc
    try:
        yield fd
    finally:
        os.close(fd)


def _changed(file: ConfigFile, exc: OSError) -> InputError:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # what O_NOFOLLOW | O_DIRECTORY meet
        why = "a folder on its way is not a plain folder (a symbolic link since it was checked?)"
    else:
        why = exc.strerror or str(exc)
    return InputError(f"{file.shown}: {why}; {_UNCHANGED}")


def confined(path: Path, root: Path, scope: str) -> ConfigFile:
    """`path` (under `root`) read as the module says; InputError, naming it, when a link
    leads out of the scope or the file is not one plain regular file."""
    shown = Path(os.path.abspath(path))
    try:
        rel = shown.relative_to(os.path.abspath(root))
    except ValueError:
        raise InputError(f"{shown}: outside {root}, the {scope} scope; {_UNCHANGED}") from None
    real_root = Path(os.path.realpath(root))
    start = real_root / rel
    real = _resolved(start, shown)
    if not real.is_relative_to(real_root) or real == real_root:
        raise InputError(
            f"{shown}: a symbolic link to {real}, outside {real_root} (the {scope} scope being "
            f"edited); {_UNCHANGED} (make it a regular file, or edit its target yourself)"
        )
    new = ConfigFile(shown, real, real_root, real != start, None, 0, (0, 0))
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        folder = _walk(real_root, real.relative_to(real_root).parts[:-1], None)
        try:
            fd = os.open(real.name, flags, dir_fd=folder)
        finally:
            os.close(folder)
    except FileNotFoundError:
        return new
    except OSError as exc:
        raise _changed(new, exc) from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"{shown}: not a regular file; {_UNCHANGED}")
        if info.st_nlink != 1:
            raise InputError(
                f"{shown}: a hard link (one of {info.st_nlink} names of one file, whose bytes "
                f"would be copied here); {_UNCHANGED} (make it a file of its own, then run again)"
            )
        if info.st_size > MAX_CONFIG_BYTES:
            raise InputError(f"{shown}: over {MAX_CONFIG_BYTES >> 20} MiB; {_UNCHANGED}")
        data = _read_all(fd)
    except OSError as exc:
        raise _changed(new, exc) from exc
    finally:
        os.close(fd)
    times = (info.st_atime_ns, info.st_mtime_ns)
    return ConfigFile(shown, real, real_root, new.linked, data, stat.S_IMODE(info.st_mode), times)


def _read_all(fd: int) -> bytes:
    pieces = []
    left = MAX_CONFIG_BYTES + 1
    while left > 0 and (piece := os.read(fd, min(left, 1 << 20))):
        pieces.append(piece)
        left -= len(piece)
    data = b"".join(pieces)
    if len(data) > MAX_CONFIG_BYTES:
        raise OSError(errno.EFBIG, f"over {MAX_CONFIG_BYTES >> 20} MiB")
    return data


def _write_new(folder: int, name: str, data: bytes, mode: int | None) -> None:
    """`data` into a file `name` that this call creates (EEXIST if the name is taken), with
    `mode` set on its own descriptor (None: the umask's, as for any new file)."""
    fd = os.open(name, _NEW, 0o600 if mode is not None else 0o666, dir_fd=folder)
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def _backup(folder: int, file: ConfigFile) -> str:
    """A copy of what `file` held, under the first free name of this second's."""
    assert file.data is not None
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for n in range(_BACKUPS):
        name = f"{file.real.name}.imprint-{stamp}{f'-{n}' if n else ''}.bak"
        try:
            _write_new(folder, name, file.data, file.mode)
        except FileExistsError:
            continue  # taken (by a link someone planted, say): the next name
        with contextlib.suppress(OSError):
            os.utime(name, ns=file.times, dir_fd=folder, follow_symlinks=False)
        return name
    raise OSError(errno.EEXIST, f"{_BACKUPS} backup names taken")


def _replace(folder: int, file: ConfigFile, data: bytes, mode: int | None) -> None:
    tmp = f".{file.real.name}.imprint-{secrets.token_hex(8)}.tmp"
    try:
        _write_new(folder, tmp, data, mode)
        os.replace(tmp, file.real.name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=folder)
        raise


@dataclass
class Pending:
    """A file to write: what it held when read and the text it gets."""

    file: ConfigFile
    text: str
    backup: str | None = field(default=None, init=False)
    made: list[Path] = field(default_factory=list, init=False)
    done: bool = field(default=False, init=False)

    def _write(self) -> None:
        mode = None if self.file.data is None else self.file.mode
        try:
            with _folder(self.file, self.made) as folder:
                try:
                    if self.file.data is not None:
                        self.backup = _backup(folder, self.file)
                    fail("hooks.config.write", DiskFull)
                    _replace(folder, self.file, self.text.encode("utf-8"), mode)
                except BaseException:
                    if self.backup:
                        with contextlib.suppress(OSError):
                            os.unlink(self.backup, dir_fd=folder)
                    raise
        except OSError as exc:
            self._unmake()
            raise _changed(self.file, exc) from exc
        except BaseException:
            self._unmake()
            raise
        self.done = True

    def _unmake(self) -> None:
        for made in reversed(self.made):
            with contextlib.suppress(OSError):
                made.rmdir()

    def _undo(self) -> None:
        """Put the file back as it was read; the backup and the folders made go."""
        with contextlib.suppress(OSError, InputError), _folder(self.file) as folder:
            if self.file.data is None:
                os.unlink(self.file.real.name, dir_fd=folder)
            else:
                _replace(folder, self.file, self.file.data, self.file.mode)
                os.utime(self.file.real.name, ns=self.file.times, dir_fd=folder)
            if self.backup:
                os.unlink(self.backup, dir_fd=folder)
        self._unmake()

    def line(self) -> str:
        shown, real = self.file.shown, self.file.real
        where = f" (through the link, to {real})" if self.file.linked else ""
        kept = ""
        if self.backup:
            backup = real.with_name(self.backup)
            kept = f" (the old file is kept as {backup if where else backup.name})"
        return f"wrote: {shown}{where}{kept}"


def write_all(pending: Sequence[Pending]) -> None:
    """Write each file, or none: when one fails, those written before it are put back."""
    for item in pending:
        try:
            item._write()
        except BaseException:
            for written in reversed([p for p in pending if p.done]):
                written._undo()
            raise
