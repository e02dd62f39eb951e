"""The daemon's requests besides an MCP session, one type per operation, read from what a
hello holds under the operation's name (`imprint.daemon.handlers` answers each). Standard
library NamedTuples (not dataclasses, which a hook must not load), so a light client names
them too: `parse` reads a request the way the daemon always has, and a value of the wrong
type is a DaemonError naming it. The client sends each as one line through `hello_line` (a
session's hello: `SessionHello`), byte for byte what it sent as a dict before, so an older
daemon reads it as ever.

The dashboard's request is read by `imprint.daemon.hosting.DashboardHost`, a hook's by
`imprint.reads.briefing.HookRequest`, a watch's by `imprint.watch.WatchHost`; a capture's
poke carries nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NamedTuple

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


def _body(request: Any, omit_default: tuple[str, ...] = ()) -> dict[str, Any]:
    """A request's fields by name, in order: what the hello holds under its operation; one
    in `omit_default` left out while it holds its default (one an older daemon never read)."""
    defaults = request._field_defaults
    return {
        k: v
        for k, v in request._asdict().items()
        if not (k in omit_default and k in defaults and v == defaults[k])
    }


class StatusRequest(NamedTuple):
    """`imprint status` beside the daemon: one workspace's row ("" for the active one)."""

    @property
    def op(self) -> str:
        return "status"

    workspace: str = ""
    check: bool = False
    text: bool = False  # the command's whole text too (sent only when True)

    @classmethod
    def parse(cls, body: dict[str, Any]) -> StatusRequest:
        workspace, check = body.get("workspace", ""), body.get("check", False)
        if not isinstance(workspace, str) or not isinstance(check, bool):
            raise DaemonError("status: workspace must be a string and check a boolean")
        return cls(workspace, check, body.get("text") is True)

    def body(self) -> dict[str, Any]:
        return _body(self, ("text",))


class BackupRequest(NamedTuple):
    """`imprint backup` beside the daemon: into `dest` ("" for the backup folder)."""

    @property
    def op(self) -> str:
        return "backup"

    dest: str = ""

    @classmethod
    def parse(cls, body: dict[str, Any]) -> BackupRequest:
        dest = body.get("dest", "")
        if not isinstance(dest, str):
            raise DaemonError("backup: dest must be a folder path")
        return cls(dest)

    def body(self) -> dict[str, Any]:
        return _body(self)


class SyncRequest(NamedTuple):
    """`imprint sync` beside the daemon: what the folder `dir` brings, into `workspace`
    ("" for the active one) or, with `all`, into every workspace it holds."""

    @property
    def op(self) -> str:
        return "sync"

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


class ImportRequest(NamedTuple):
    """`imprint import` beside the daemon: the export file `path`, into `workspace` ("" for
    the file's own), the file's version of a memory taken over the store's with `replace`."""

    @property
    def op(self) -> str:
        return "import"

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


class DashboardRequest(NamedTuple):
    """`imprint dashboard`: the owner serves it on `port` while the connection stays open
    (read by `imprint.daemon.hosting.DashboardHost`)."""

    @property
    def op(self) -> str:
        return "dashboard"

    port: int = 0

    def body(self) -> dict[str, Any]:
        return _body(self)


class CaptureRequest(NamedTuple):
    """A hook's poke: captures are queued (`imprint.hooklib.queue`); it carries nothing and
    is sent with no pid (it reads no answer)."""

    @property
    def op(self) -> str:
        return "capture"

    def body(self) -> dict[str, Any]:
        return {}


class HookAsk(NamedTuple):
    """`imprint hook`'s question, its fields as the hook composed them: the daemon reads
    them as an `imprint.reads.briefing.HookRequest` (pydantic, which a hook does not load)."""

    @property
    def op(self) -> str:
        return "hook"

    asked: Mapping[str, Any]

    def body(self) -> dict[str, Any]:
        return dict(self.asked)


class WatchAsk(NamedTuple):
    """`imprint watch`'s add, list or stop (`op` and its fields), read by
    `imprint.watch.WatchHost`."""

    @property
    def op(self) -> str:
        return "watch"

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
    """The one line a client sends for `request`: `{op: body, "pid": pid, "serves": ...}`
    (no pid where None), as the daemon's `HANDLERS` read it."""
    hello: dict[str, Any] = {request.op: request.body()}
    if pid is not None:
        hello["pid"] = pid
    hello["serves"] = serves
    return (json.dumps(hello) + "\n").encode()


class SessionHello(NamedTuple):
    """The hello that opens an MCP session: the client's working directory, pid, the
    folders it may ingest under besides (`roots`) and the data dir it expects served;
    `cwd_root` False where the working directory is not one of them."""

    cwd: str
    pid: int
    roots: list[str]
    serves: Any
    cwd_root: bool = True

    def line(self) -> bytes:
        return (json.dumps(_body(self, ("cwd_root",))) + "\n").encode()
