"""The session-start briefing when no daemon answers yet: read by the hook itself, straight
from the active workspace's SQLite file, opened read-only.

Starting a daemon takes longer than a session start may wait, so the hook starts one in
the background (for the next hook) and briefs from the store's SQLite file meanwhile: the
briefing needs only memories, facts and session summaries, all in SQLite. WAL mode lets a
read-only connection read beside a writer (the daemon's readers open it the same way,
`imprint.store.sqlite_read.SqliteReader`), and nothing here imports Chroma, the embedder,
the actors or the config schema: SqliteReader, its records (pydantic) and the standard
library. The rows are laid out by `imprint.hooklib.compose`, as the daemon's briefing is.
"""

from __future__ import annotations

from pathlib import Path

from imprint.errors import SQLITE_FILE, damaged_sqlite
from imprint.hooklib.compose import (
    FACTS_SHOWN,
    MEMORY_SECTIONS,
    SESSIONS_SHOWN,
    SUPERSEDED_SLACK,
    compose_briefing,
    pick_project,
    session_roots,
)
from imprint.workspaces import resolve_workspace, workspace_dir

__all__ = ["StoreUnreadable", "cold_briefing", "store_file"]


class StoreUnreadable(Exception):
    """The store's SQLite file is there but cannot be read (corrupt, or not a database)."""


def store_file(data_dir: Path) -> Path:
    """The active workspace's SQLite file."""
    return workspace_dir(data_dir, resolve_workspace(data_dir)) / SQLITE_FILE


def cold_briefing(data_dir: Path, cwd: Path, max_chars: int, exclude: tuple[str, ...]) -> str:
    """The briefing for the project of a session in `cwd`, read from the active workspace's
    SQLite file; empty when there is no store yet, the project is unknown or excluded, or
    it has nothing to say. Raises StoreUnreadable for a store that cannot be read."""
    path = store_file(data_dir)
    if not path.is_file():
        return ""  # nothing stored yet: nothing to brief
    import sqlite3

    from imprint.store.records import SESSION_SUMMARY_KIND, project_from_folder
    from imprint.store.sqlite_read import SqliteReader

    try:
        reader = SqliteReader(path)
    except sqlite3.Error as exc:
        raise StoreUnreadable(_unreadable(path, exc)) from exc
    try:
        here = cwd.resolve()
        roots = reader.project_roots()
        project, new = pick_project(here, roots, session_roots(data_dir), project_from_folder)
        if new and project not in {name for name, _ in reader.projects()}:
            project = ""
        if not project or project in exclude:
            return ""
        newest = [
            (heading, reader.newest(project, types, kinds, limit + SUPERSEDED_SLACK))
            for heading, types, kinds, limit in MEMORY_SECTIONS
        ]
        ids = [r.id for _, records in newest for r in records]
        superseded = {link.old for link in reader.supersede_links(ids)} if ids else set()
        return compose_briefing(
            project,
            newest,
            superseded,
            reader.facts(project, "", False, FACTS_SHOWN),
            reader.newest(project, (), (SESSION_SUMMARY_KIND,), SESSIONS_SHOWN),
            max_chars,
        )
    except sqlite3.Error as exc:
        raise StoreUnreadable(_unreadable(path, exc)) from exc
    finally:
        reader.close()


def _unreadable(path: Path, exc: Exception) -> str:
    import sqlite3

    if type(exc) is sqlite3.DatabaseError:  # "file is not a database", "malformed"
        return "briefing: " + damaged_sqlite(f"the store {path}", exc)
    return f"briefing: the store {path} could not be read: {' '.join(str(exc).split())}"
