"""`imprint backup` and the daemon's rolling backups: a consistent snapshot of every
workspace, with a manifest of checksums, verified once written.

Each workspace's writer copies its files in its own mailbox (`imprint.store.snapshot`), so
the snapshot is consistent while the daemon serves: reads go on, writes wait for the copy.
The snapshot is made in `DIR.partial` and renamed to DIR once its manifest is written: a
backup killed midway leaves no DIR that looks whole, and the next one starts over. Then the
copy is read back against its manifest and each SQLite file checked (`PRAGMA
quick_check`); what came of it is kept in `{data_dir}/backups/last.json`, which `imprint
status` and the dashboard show. The config file is not copied (it may hold API keys);
`imprint restore` checks the manifest again.

Rolling backups (`backup.every_hours`) are named `auto-<UTC time>` and say so in their
manifest (`made_by: schedule`); `prune_rolling` removes the oldest of those beyond
`backup.keep`, and nothing else: a backup made by `imprint backup` is never removed.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from imprint._fs import atomic_write_text, private_dir
from imprint.actors.lifecycle import Runtime
from imprint.errors import SQLITE_FILE, InputError
from imprint.store.snapshot import file_sums
from imprint.workspaces import active_workspace, list_workspaces, validate_name
from imprint.writes.gateway import Writes

__all__ = [
    "BACKUP_FORMAT",
    "BACKUP_VERSION",
    "MANIFEST",
    "ROLLING_PREFIX",
    "SQLITE_SIDE",
    "BackupRecord",
    "backup_data_dir",
    "backup_line",
    "backups_dir",
    "default_backup_dir",
    "last_backup",
    "make_backup",
    "prune_rolling",
    "read_manifest",
    "record_failure",
    "rolling_backups",
]

BACKUP_FORMAT = "imprint-backup"
BACKUP_VERSION = 1
MANIFEST = "manifest.json"
LAST = "last.json"
ROLLING_PREFIX = "auto-"
PARTIAL = ".partial"

MadeBy = Literal["command", "schedule"]


class BackupRecord(BaseModel):
    """What the last backup of a data dir did: where, when, how big, and whether the copy
    read back equal to its manifest (`error` says why not, or why no backup was made)."""

    model_config = ConfigDict(frozen=True)

    path: str
    made_by: MadeBy
    created_at: float
    bytes: int = 0
    seconds: float = 0.0
    workspaces: tuple[str, ...] = ()
    verified: bool = False
    error: str = ""

    def line(self) -> str:
        """One line for `imprint status` and the dashboard."""
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(self.created_at))
        kind = "rolling" if self.made_by == "schedule" else "imprint backup"
        if self.error and not self.bytes:
            return f"last backup FAILED {when} ({kind}): {self.error}"
        verdict = "verified" if self.verified else f"NOT verified: {self.error}"
        return f"last backup {when} ({kind}), {self.bytes / 1e6:.1f} MB, {verdict}: {self.path}"


def backups_dir(data_dir: Path) -> Path:
    return data_dir / "backups"


def _stamp(now: float) -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))


def default_backup_dir(data_dir: Path, now: float | None = None, prefix: str = "") -> Path:
    """`{data_dir}/backups/<prefix><UTC time>`, a suffix added when that name is taken."""
    base = backups_dir(data_dir) / f"{prefix}{_stamp(time.time() if now is None else now)}"
    folder, n = base, 1
    while folder.exists() or folder.with_name(folder.name + PARTIAL).exists():
        n += 1
        folder = base.with_name(f"{base.name}-{n}")
    return folder


def _verify(folder: Path) -> str:
    """Empty when the backup in `folder` reads back equal to its manifest and each SQLite
    copy passes `PRAGMA quick_check`; else what is wrong, in one line."""
    try:
        manifest = read_manifest(folder, what="backup")
    except InputError as exc:
        return str(exc)
    for ws in manifest.get("workspaces", {}):
        path = folder / "workspaces" / ws / SQLITE_FILE
        try:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                answer = conn.execute("PRAGMA quick_check").fetchone()
            finally:
                conn.close()
        except sqlite3.Error as exc:
            return f"backup: workspaces/{ws}/{SQLITE_FILE} cannot be read: {exc}"
        if not answer or answer[0] != "ok":
            return f"backup: workspaces/{ws}/{SQLITE_FILE} fails quick_check: {answer}"
    return ""


def _remember(data_dir: Path, record: BackupRecord) -> None:
    private_dir(backups_dir(data_dir))
    atomic_write_text(backups_dir(data_dir) / LAST, record.model_dump_json(indent=1) + "\n")


def make_backup(
    runtime: Runtime,
    dest: Path | None = None,
    *,
    made_by: MadeBy = "command",
    now: float | None = None,
) -> BackupRecord:
    """Back up every workspace of the runtime's data dir into `dest` (a new folder; default
    `{data_dir}/backups/<UTC time>`, `auto-<UTC time>` for a rolling one), verify the copy,
    and keep what came of it as the data dir's last backup. `now` is the time the backup
    is dated (a scheduler's clock)."""
    now = time.time() if now is None else now
    prefix = ROLLING_PREFIX if made_by == "schedule" else ""
    dest = (dest or default_backup_dir(runtime.data_dir, now, prefix)).expanduser().resolve()
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise InputError(f"backup: {dest} already exists and is not empty; name a new folder")
    partial = dest.with_name(dest.name + PARTIAL)
    if partial.exists():  # a backup killed midway: its files are not a snapshot
        shutil.rmtree(partial)
    private_dir(partial)
    writes = Writes(runtime)
    workspaces: dict[str, Any] = {}
    started = time.monotonic()
    for name in list_workspaces(runtime.data_dir):
        ws = writes.open(name, create=False)
        if made_by == "schedule":  # a rolling backup is background work: a recall first
            runtime.priority.turn("backup")
        files = writes.backup(ws, partial / "workspaces" / ws)
        workspaces[ws] = {"files": files}
    manifest = {
        "format": BACKUP_FORMAT,
        "version": BACKUP_VERSION,
        "created_at": now,
        "made_by": made_by,
        "active_workspace": active_workspace(runtime.data_dir),
        "workspaces": workspaces,
    }
    atomic_write_text(partial / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    if dest.exists():
        dest.rmdir()  # empty, checked above
    partial.rename(dest)
    problem = _verify(dest)
    record = BackupRecord(
        path=str(dest),
        made_by=made_by,
        created_at=now,
        bytes=sum(int(f["bytes"]) for w in workspaces.values() for f in w["files"].values()),
        seconds=round(time.monotonic() - started, 3),
        workspaces=tuple(workspaces),
        verified=not problem,
        error=problem,
    )
    _remember(runtime.data_dir, record)
    return record


def backup_data_dir(runtime: Runtime, dest: Path | None = None) -> str:
    """`imprint backup`: `make_backup`, in one line saying what was written where."""
    record = make_backup(runtime, dest)
    verdict = "verified" if record.verified else f"NOT verified: {record.error}"
    return (
        f"backed up {len(record.workspaces)} workspaces ({', '.join(record.workspaces) or 'none'}; "
        f"{record.bytes / 1e6:.1f} MB) to {record.path} in {record.seconds:.1f} s; {verdict}"
    )


def record_failure(data_dir: Path, made_by: MadeBy, now: float, error: str) -> BackupRecord:
    """Keep a backup that failed as the last backup (status shows it), and return it."""
    record = BackupRecord(path="", made_by=made_by, created_at=now, error=error)
    _remember(data_dir, record)
    return record


def last_backup(data_dir: Path) -> BackupRecord | None:
    """The data dir's last backup, as `make_backup` kept it; None before the first."""
    path = backups_dir(data_dir) / LAST
    try:
        return BackupRecord.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValidationError) as exc:
        return BackupRecord(path=str(path), made_by="command", created_at=0.0, error=str(exc))


def backup_line(data_dir: Path) -> str:
    """`imprint status`'s line for the last backup."""
    record = last_backup(data_dir)
    if record is None:
        return "last backup: none yet (`imprint backup`; backup.every_hours for rolling ones)"
    return record.line()


def rolling_backups(data_dir: Path) -> list[tuple[float, Path]]:
    """The rolling backups in `{data_dir}/backups` (an `auto-` folder whose manifest says
    `made_by: schedule`), oldest first, with the time each is dated."""
    found = []
    folder = backups_dir(data_dir)
    for path in sorted(folder.glob(ROLLING_PREFIX + "*")) if folder.is_dir() else []:
        if path.name.endswith(PARTIAL) or not path.is_dir():
            continue
        try:
            manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(manifest, dict) and manifest.get("made_by") == "schedule":
            found.append((float(manifest.get("created_at", 0.0)), path))
    return sorted(found)


def prune_rolling(data_dir: Path, keep: int) -> list[Path]:
    """Remove the oldest rolling backups beyond `keep`, and rolling backups a kill left
    partial; what was removed. Nothing `imprint backup` made is touched."""
    removed = [path for _, path in rolling_backups(data_dir)[:-keep]]
    folder = backups_dir(data_dir)
    if folder.is_dir():
        removed += sorted(folder.glob(f"{ROLLING_PREFIX}*{PARTIAL}"))
    for path in removed:
        shutil.rmtree(path, ignore_errors=True)
    return removed


# What opening a backup's SQLite copy read-only (`_verify`) leaves beside it: its shared-memory
# index (rebuilt from the file on the next open) and an empty write-ahead log. A log with
# pages in it would be replayed into the store, so one with any byte is not taken.
SQLITE_SIDE = ("-shm", "-wal")


def _side_file(rel: str, listed: set[str], size: int) -> bool:
    for tail in SQLITE_SIDE:
        if rel.endswith(tail) and rel.removesuffix(tail) in listed:
            return tail == "-shm" or size == 0
    return False


def _unlisted(folder: Path, listed: set[str]) -> str | None:
    """The first entry under a workspace's folder of a backup that is not a plain folder or
    a file the manifest lists (a symlink, a FIFO, a file put there since), by its path
    relative to `folder`; None when there is none. Nothing is followed."""
    if folder.is_symlink() or not folder.is_dir():
        return "."
    for top, dirs, files in os.walk(folder, followlinks=False):
        for name in sorted(dirs + files):
            path = Path(top) / name
            rel = path.relative_to(folder).as_posix()
            info = path.lstat()
            if stat.S_ISDIR(info.st_mode):
                continue
            if not stat.S_ISREG(info.st_mode):
                return rel
            if rel not in listed and not _side_file(rel, listed, info.st_size):
                return rel
    return None


def read_manifest(folder: Path, what: str = "restore") -> dict[str, Any]:
    """A backup's manifest, once every file it names has its size and SHA-256 and nothing
    else is in its workspaces' folders (no symlink, no file it does not list); InputError
    naming the first that has not (nothing is changed). `what` begins the error."""
    path = folder / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{what}: {path} cannot be read ({exc}); not an Imprint backup") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != BACKUP_FORMAT:
        raise InputError(f"{what}: {path} is not an Imprint backup manifest")
    if manifest.get("version") != BACKUP_VERSION:
        raise InputError(
            f"{what}: backup format version {manifest.get('version')!r} is not known; "
            f"this imprint reads version {BACKUP_VERSION}"
        )
    tail = "; nothing was restored" if what == "restore" else ""
    if (folder / "workspaces").is_symlink():
        raise InputError(f"{what}: workspaces is a symlink; the backup is not taken{tail}")
    for ws, entry in manifest.get("workspaces", {}).items():
        validate_name(ws, f"{what}: workspace")
        extra = _unlisted(folder / "workspaces" / ws, set(entry["files"]))
        if extra is not None:
            raise InputError(
                f"{what}: workspaces/{ws}/{extra} is not a plain file the manifest lists (a "
                f"symlink, or put there since the backup); the backup is not taken{tail}"
            )
        held = file_sums(folder / "workspaces" / ws)
        for rel, want in entry["files"].items():
            got = held.get(rel)
            if got != want:
                state = "is missing" if got is None else "differs from the manifest"
                raise InputError(
                    f"{what}: workspaces/{ws}/{rel} {state}; the backup is damaged{tail}"
                )
    return manifest
