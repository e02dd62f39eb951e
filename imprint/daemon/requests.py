"""The daemon's requests besides an MCP session, one type per operation, read from what a
hello holds under the operation's name (`imprint.daemon.handlers` answers each). Standard
library dataclasses, so a light client can name them too: `parse` reads a request the way
the daemon always has, and a value of the wrong type is a DaemonError naming it.

The dashboard's request is read by `imprint.daemon.hosting.DashboardHost`, a hook's by
`imprint.reads.briefing.HookRequest`, a watch's by `imprint.watch.WatchHost`; a capture's
poke carries nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from imprint.errors import DaemonError

__all__ = ["BackupRequest", "ImportRequest", "StatusRequest", "SyncRequest"]


@dataclass(frozen=True)
class StatusRequest:
    """`imprint status` beside the daemon: one workspace's row ("" for the active one)."""

    workspace: str = ""
    check: bool = False

    @classmethod
    def parse(cls, body: dict[str, Any]) -> StatusRequest:
        workspace, check = body.get("workspace", ""), body.get("check", False)
        if not isinstance(workspace, str) or not isinstance(check, bool):
            raise DaemonError("status: workspace must be a string and check a boolean")
        return cls(workspace, check)


@dataclass(frozen=True)
class BackupRequest:
    """`imprint backup` beside the daemon: into `dest` ("" for the backup folder)."""

    dest: str = ""

    @classmethod
    def parse(cls, body: dict[str, Any]) -> BackupRequest:
        dest = body.get("dest", "")
        if not isinstance(dest, str):
            raise DaemonError("backup: dest must be a folder path")
        return cls(dest)


@dataclass(frozen=True)
class SyncRequest:
    """`imprint sync` beside the daemon: what the folder `dir` brings, into `workspace`
    ("" for the active one) or, with `all`, into every workspace it holds."""

    dir: str
    workspace: str = ""
    all: bool = False

    @classmethod
    def parse(cls, body: dict[str, Any]) -> SyncRequest:
        every = bool(body.get("all", False))  # any true value, as the daemon always took it
        folder, workspace = body.get("dir"), body.get("workspace", "")
        if not isinstance(folder, str) or not folder or not isinstance(workspace, str):
            raise DaemonError("sync: dir must be a folder path and workspace a string")
        return cls(folder, workspace, every)


@dataclass(frozen=True)
class ImportRequest:
    """`imprint import` beside the daemon: the export file `path`, into `workspace` ("" for
    the file's own), the file's version of a memory taken over the store's with `replace`."""

    path: str
    workspace: str = ""
    replace: bool = False

    @classmethod
    def parse(cls, body: dict[str, Any]) -> ImportRequest:
        path, workspace = body.get("path"), body.get("workspace", "")
        replace = body.get("replace", False)
        if not isinstance(path, str) or not isinstance(workspace, str):
            raise DaemonError("import: path must be a file path and workspace a string")
        if not isinstance(replace, bool):
            raise DaemonError("import: replace must be true or false")
        return cls(path, workspace, replace)
