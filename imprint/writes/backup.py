"""`imprint backup`: a consistent snapshot of every workspace, with a manifest of checksums.

Each workspace's writer copies its files in its own mailbox (`imprint.store.snapshot`), so
the snapshot is consistent while the daemon serves: reads go on, writes wait for the copy.
The snapshot is made in `DIR.partial` and renamed to DIR once its manifest is written: a
backup killed midway leaves no DIR that looks whole, and the next one starts over. The
config file is not copied (it may hold API keys); `imprint restore` checks the manifest.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

from imprint._fs import atomic_write_text, private_dir
from imprint.actors.lifecycle import Runtime
from imprint.errors import InputError
from imprint.store.snapshot import file_sums
from imprint.workspaces import active_workspace, list_workspaces, validate_name
from imprint.writes.gateway import Writes

__all__ = [
    "BACKUP_FORMAT",
    "BACKUP_VERSION",
    "MANIFEST",
    "backup_data_dir",
    "default_backup_dir",
    "read_manifest",
]

BACKUP_FORMAT = "imprint-backup"
BACKUP_VERSION = 1
MANIFEST = "manifest.json"


def default_backup_dir(data_dir: Path) -> Path:
    return data_dir / "backups" / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())


def backup_data_dir(runtime: Runtime, dest: Path | None = None) -> str:
    """Back up every workspace of the runtime's data dir into `dest` (a new folder; default
    `{data_dir}/backups/<UTC time>`); one line saying what was written where."""
    dest = (dest or default_backup_dir(runtime.data_dir)).expanduser().resolve()
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise InputError(f"backup: {dest} already exists and is not empty; name a new folder")
    partial = dest.with_name(dest.name + ".partial")
    if partial.exists():  # a backup killed midway: its files are not a snapshot
        shutil.rmtree(partial)
    private_dir(partial)
    writes = Writes(runtime)
    workspaces: dict[str, Any] = {}
    started = time.monotonic()
    for name in list_workspaces(runtime.data_dir):
        ws = writes.open(name, create=False)
        files = writes.backup(ws, partial / "workspaces" / ws)
        workspaces[ws] = {"files": files}
    manifest = {
        "format": BACKUP_FORMAT,
        "version": BACKUP_VERSION,
        "created_at": time.time(),
        "active_workspace": active_workspace(runtime.data_dir),
        "workspaces": workspaces,
    }
    atomic_write_text(partial / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    if dest.exists():
        dest.rmdir()  # empty, checked above
    partial.rename(dest)
    size = sum(int(f["bytes"]) for w in workspaces.values() for f in w["files"].values())
    return (
        f"backed up {len(workspaces)} workspaces ({', '.join(workspaces) or 'none'}; "
        f"{size / 1e6:.1f} MB) to {dest} in {time.monotonic() - started:.1f} s"
    )


def read_manifest(folder: Path) -> dict[str, Any]:
    """A backup's manifest, once every file it names has its size and SHA-256; InputError
    naming the first that has not (nothing is changed)."""
    path = folder / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"restore: {path} cannot be read ({exc}); not an Imprint backup") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != BACKUP_FORMAT:
        raise InputError(f"restore: {path} is not an Imprint backup manifest")
    if manifest.get("version") != BACKUP_VERSION:
        raise InputError(
            f"restore: backup format version {manifest.get('version')!r} is not known; "
            f"this imprint reads version {BACKUP_VERSION}"
        )
    for ws, entry in manifest.get("workspaces", {}).items():
        validate_name(ws, "restore: workspace")
        held = file_sums(folder / "workspaces" / ws)
        for rel, want in entry["files"].items():
            got = held.get(rel)
            if got != want:
                what = "is missing" if got is None else "differs from the manifest"
                raise InputError(
                    f"restore: workspaces/{ws}/{rel} {what}; the backup is damaged; "
                    "nothing was restored"
                )
    return manifest
