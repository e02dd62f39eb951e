"""The daemon's requests besides an MCP session, one type per operation, read from what a
hello holds under the operation's name (`imprint.daemon.handlers` answers each). Standard
library dataclasses, so a light client can name them too: `parse` reads a request the way
the daemon always has, and a value of the wrong type is a DaemonError naming it. The
client sends each as one line through `hello_line` (a session's hello: `SessionHello`),
byte for byte what it sent as a dict before, so an older daemon reads it as ever.

The dashboard's request is read by `imprint.daemon.hosting.DashboardHost`, a hook's by
`imprint.reads.briefing.HookRequest`, a watch's by `imprint.watch.WatchHost`; a capture's
poke carries nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from imprint.errors import DaemonError

__all__ = [
    "BackupRequest",
    "CaptureRequest",
    "DashboardRequest",
    "HookAsk",
    "ImportRequest",
    "Request",
    "SessionHello",
    "StatusRequest",
    "SyncRequest",
    "WatchAsk",
    "hello_line",
]

# A field left out of the line while it holds its default (one an older daemon never read).
_OMIT_DEFAULT = {"omit_default": True}


def _body(request: Any) -> dict[str, Any]:
    """A request's fields by name, in order: what the hello holds under its operation."""
    return {
        f.name: getattr(request, f.name)
        for f in fields(request)
        if not (f.metadata.get("omit_default") and getattr(request, f.name) == f.default)
    }


@dataclass(frozen=True)
class StatusRequest:
    """`imprint status` beside the daemon: one workspace's row ("" for the active one)."""

    OP: ClassVar[str] = "status"
    workspace: str = ""
    check: bool = False
    text: bool = field(default=False, metadata=_OMIT_DEFAULT)  # the command's whole text too

    @classmethod
    def parse(cls, body: dict[str, Any]) -> StatusRequest:
        workspace, check = body.get("workspace", ""), body.get("check", False)
        if not isinstance(workspace, str) or not isinstance(check, bool):
            raise DaemonError("status: workspace must be a string and check a boolean")
        return cls(workspace, check, body.get("text") is True)

    def body(self) -> dict[str, Any]:
        return _body(self)


@dataclass(frozen=True)
class BackupRequest:
    """`imprint backup` beside the daemon: into `dest` ("" for the backup folder)."""

    OP: ClassVar[str] = "backup"

    dest: str = ""

    @classmethod
    def parse(cls, body: dict[str, Any]) -> BackupRequest:
        dest = body.get("dest", "")
        if not isinstance(dest, str):
            raise DaemonError("backup: dest must be a folder path")
        return cls(dest)

    def body(self) -> dict[str, Any]:
        return _body(self)


@dataclass(frozen=True)
class SyncRequest:
    """`imprint sync` beside the daemon: what the folder `dir` brings, into `workspace`
    ("" for the active one) or, with `all`, into every workspace it holds."""

    OP: ClassVar[str] = "sync"

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

    def body(self) -> dict[str, Any]:
        return _body(self)


@dataclass(frozen=True)
class ImportRequest:
    """`imprint import` beside the daemon: the export file `path`, into `workspace` ("" for
    the file's own), the file's version of a memory taken over the store's with `replace`."""

    OP: ClassVar[str] = "import"

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

    def body(self) -> dict[str, Any]:
        return _body(self)


@dataclass(frozen=True)
class DashboardRequest:
    """`imprint dashboard`: the owner serves it on `port` while the connection stays open
    (read by `imprint.daemon.hosting.DashboardHost`)."""

    OP: ClassVar[str] = "dashboard"
    port: int = 0

    def body(self) -> dict[str, Any]:
        return _body(self)


@dataclass(frozen=True)
class CaptureRequest:
    """A hook's poke: captures are queued (`imprint.hooklib.queue`); it carries nothing and
    is sent with no pid (it reads no answer)."""

    OP: ClassVar[str] = "capture"

    def body(self) -> dict[str, Any]:
        return {}


@dataclass(frozen=True)
class HookAsk:
    """`imprint hook`'s question, its fields as the hook composed them: the daemon reads
    them as an `imprint.reads.briefing.HookRequest` (pydantic, which a hook does not load)."""

    OP: ClassVar[str] = "hook"
    asked: Mapping[str, Any]

    def body(self) -> dict[str, Any]:
        return dict(self.asked)


@dataclass(frozen=True)
class WatchAsk:
    """`imprint watch`'s add, list or stop (`op` and its fields), read by
    `imprint.watch.WatchHost`."""

    OP: ClassVar[str] = "watch"
    asked: Mapping[str, Any]

    def body(self) -> dict[str, Any]:
        return dict(self.asked)


Request = (
    StatusRequest
    | BackupRequest
    | SyncRequest
    | ImportRequest
    | DashboardRequest
    | CaptureRequest
    | HookAsk
    | WatchAsk
)


def hello_line(request: Request, serves: Any, pid: int | None = None) -> bytes:
    """The one line a client sends for `request`: `{OP: body, "pid": pid, "serves": ...}`
    (no pid where None), as the daemon's `HANDLERS` read it."""
    hello: dict[str, Any] = {request.OP: request.body()}
    if pid is not None:
        hello["pid"] = pid
    hello["serves"] = serves
    return (json.dumps(hello) + "\n").encode()


@dataclass(frozen=True)
class SessionHello:
    """The hello that opens an MCP session: the client's working directory, pid, the
    folders it may ingest under besides (`roots`) and the data dir it expects served;
    `cwd_root` False where the working directory is not one of them."""

    cwd: str
    pid: int
    roots: list[str]
    serves: Any
    cwd_root: bool = field(default=True, metadata=_OMIT_DEFAULT)

    def line(self) -> bytes:
        return (json.dumps(_body(self)) + "\n").encode()
