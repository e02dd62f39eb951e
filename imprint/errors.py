"""One exception tree. Every message is one line that names the argument and what is allowed.

`failure_line` turns the failures that are not Imprint's bugs (a damaged SQLite file, the
file system, Chroma, input nested too deeply to read) into the same kind of line, for the
entry points that would otherwise show a traceback or the SDK's bare `Error executing tool`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where a failure is read: a hook process needs no sqlite3
    import sqlite3

__all__ = [
    "ConfigError",
    "DaemonError",
    "DeadlineExceeded",
    "ImprintError",
    "InputError",
    "ModelMissingError",
    "SkippedLate",
    "StoreBusyError",
    "StoreError",
    "WorkspaceError",
    "damaged_sqlite",
    "failure_line",
]


class ImprintError(Exception):
    """Base of every error Imprint raises on purpose."""


class InputError(ImprintError):
    """A caller's argument is not allowed; nothing was changed."""


class ConfigError(InputError):
    """A configuration key or value is not allowed."""


class WorkspaceError(InputError):
    """A workspace name is malformed or names no workspace."""


class StoreError(ImprintError):
    """The store could not do what was asked."""


class DaemonError(StoreError):
    """The data dir's daemon could not be asked, or could not read what it was asked (its
    socket protocol: `imprint.daemon.requests`). A StoreError, as such failures were."""


class DeadlineExceeded(StoreError):
    """A read got no answer by the deadline of the call that caused it."""


class SkippedLate(DeadlineExceeded):
    """An actor took a message whose deadline had already passed and did not run it."""


class StoreBusyError(StoreError):
    """Another process owns this workspace's embedded store."""


class ModelMissingError(ImprintError):
    """A model file that a setting names is not installed."""


MAX_CAUSE_CHARS = 300
SQLITE_FILE = "imprint.sqlite3"


def _cause(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:MAX_CAUSE_CHARS] or type(exc).__name__


def damaged_sqlite(where: str, exc: sqlite3.DatabaseError, *, opening: bool = False) -> str:
    """What to say when SQLite cannot read a workspace's file as a database (`opening`: it
    failed as it was opened, before anything was written). Chroma keeps no text, so
    `imprint repair` cannot rebuild this file: a backup can."""
    what = "is not a database" if opening else "is damaged"
    unchanged = "nothing was changed; " if opening else ""
    return (
        f"{where} {what} (truncated or corrupt: {_cause(exc)}); {unchanged}restore it from "
        "a backup, or move it aside to start the workspace empty (imprint repair cannot "
        "rebuild it: the vector index keeps no text)"
    )


def failure_line(exc: BaseException) -> str | None:
    """One line for a failure that is not a bug in Imprint: what failed and what to do.
    None for anything else, which is a bug: its traceback belongs in the log."""
    if isinstance(exc, ImprintError):
        return " ".join(str(exc).split())
    if isinstance(exc, RecursionError):
        return "input: nested too deeply to read; send flatter JSON (a few levels deep)"
    import sqlite3

    if isinstance(exc, sqlite3.OperationalError):
        return f"the workspace's SQLite file ({SQLITE_FILE}) failed: {_cause(exc)}"
    if type(exc) is sqlite3.DatabaseError:  # "malformed", "not a database": the file itself
        return damaged_sqlite(f"the workspace's {SQLITE_FILE}", exc)
    if isinstance(exc, OSError):
        where = f" ({exc.filename})" if exc.filename else ""
        reason = exc.strerror or _cause(exc)
        return f"file system: {reason}{where}"
    if type(exc).__module__.split(".")[0] == "chromadb":
        return (
            f"the vector index (Chroma) failed: {type(exc).__name__}: {_cause(exc)}; if its "
            "folder was moved or deleted, run `imprint stop`, then `imprint repair` (it "
            "rebuilds the vectors from SQLite)"
        )
    if type(exc).__module__.split(".")[0] in ("psycopg", "psycopg_pool"):
        # A database restarted or out of reach: nothing was acknowledged, and trying again is
        # safe (the same memory text gives the same id, so a write that did land is not doubled).
        return (
            f"the team database (PostgreSQL) failed: {type(exc).__name__}: {_cause(exc)}; "
            "nothing was acknowledged, try again"
        )
    return None
