"""`imprint restore DIR`: a backup's workspaces put back in this data dir, then verified.

Run with no owner of the data dir (after `imprint stop`). The manifest's checksums are
checked before anything moves. Each workspace of the backup is copied beside its folder
first and then renamed into place; the folder it replaces is moved, not deleted, under
`{data_dir}/restore-previous/<UTC time>/`. Workspaces the backup does not hold are left as
they are. Last, each restored workspace is opened and checked record by record (what
`imprint status --check` does).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from imprint._fs import private_dir
from imprint.actors.lifecycle import running
from imprint.config import Config
from imprint.reads.gateway import ActorReads
from imprint.reads.status import status_row
from imprint.workspaces import workspace_dir
from imprint.writes.backup import SQLITE_SIDE, read_manifest

__all__ = ["restore_backup"]


def restore_backup(data_dir: Path, config: Config, folder: Path) -> tuple[bool, list[str]]:
    """Put the backup in `folder` back; whether every restored workspace checked clean,
    and one line per workspace."""
    folder = folder.expanduser().resolve()
    manifest = read_manifest(folder)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    lines: list[str] = []
    names = sorted(manifest.get("workspaces", {}))
    for ws in names:
        target = workspace_dir(data_dir, ws)
        staged = target.with_name(f".{ws}.restoring")
        if staged.exists():  # a restore killed midway
            shutil.rmtree(staged)
        private_dir(target.parent)
        # SQLite's side files of the backup's own check are not the store's (`read_manifest`).
        side = shutil.ignore_patterns(*(f"*{tail}" for tail in SQLITE_SIDE))
        shutil.copytree(folder / "workspaces" / ws, staged, symlinks=True, ignore=side)
        if target.exists():
            aside = private_dir(data_dir / "restore-previous" / stamp) / ws
            target.rename(aside)
            lines.append(f"{ws}: the folder it replaced is kept at {aside}")
        staged.rename(target)
    clean = True
    with running(data_dir, config, reindex=False) as runtime:
        for ws in names:
            row = status_row(ActorReads(runtime), ws, check=True)
            clean = clean and row.consistent
            verdict = "verified: the indexes agree record by record"
            if not row.consistent:
                verdict = "NOT verified: the indexes disagree (run `imprint repair`)"
            lines.append(f"{ws}: restored {row.records} records from {folder}; {verdict}")
    return clean, lines
