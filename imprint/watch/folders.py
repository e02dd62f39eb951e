"""The watched folders of a data dir, persisted (`watch.json`, 0600) so that a daemon
started again watches them again."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from imprint._fs import atomic_write_text
from imprint.logs import get_logger

__all__ = ["WatchedFolder", "load_folders", "save_folders", "watch_file"]

log = get_logger("imprint.watch")


class WatchedFolder(BaseModel):
    """One registered folder: its resolved path, the project and workspace it feeds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    project: str = ""
    workspace: str = ""


def watch_file(data_dir: Path) -> Path:
    return data_dir / "watch.json"


def load_folders(data_dir: Path) -> list[WatchedFolder]:
    """The persisted folders; an unreadable or damaged file is logged and read as none
    (nothing is lost: the file is left as it is until the next change rewrites it)."""
    file = watch_file(data_dir)
    try:
        raw = json.loads(file.read_text(encoding="utf-8"))
        return [WatchedFolder.model_validate(item) for item in raw["folders"]]
    except FileNotFoundError:
        return []
    except (OSError, ValueError, KeyError, TypeError, ValidationError) as exc:
        log.error("watch.folders.unreadable", file=str(file), error=str(exc)[:200])
        return []


def save_folders(data_dir: Path, folders: list[WatchedFolder]) -> None:
    data = {"folders": [f.model_dump() for f in folders]}
    atomic_write_text(watch_file(data_dir), json.dumps(data, indent=1) + "\n")
