"""Requests to the data dir's daemon that are not a bridged session: one tool called in plain
JSON-RPC (`call_tool`, for `imprint search` and `recall` beside a daemon) and the one-line
requests a hello can be (`ask_status`, `ask_hook`, `ask_watch`, `ask_backup`, `ask_sync`,
`ask_dashboard`, `ask_import`). The standard library and the client half only, as
`imprint.daemon.client` is: a hook and the light command line import this.
"""

from __future__ import annotations

import itertools
import json
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from imprint.daemon.client import connect, open_session
from imprint.daemon.hello import OtherDataDir, check_served
from imprint.daemon.requests import (
    BackupRequest,
    DashboardRequest,
    HookAsk,
    ImportRequest,
    Request,
    StatusRequest,
    SyncRequest,
    WatchAsk,
    hello_line,
)
from imprint.daemon.runfile import identity
from imprint.errors import DaemonError

__all__ = [
    "ask_backup",
    "ask_dashboard",
    "ask_hook",
    "ask_import",
    "ask_status",
    "ask_status_text",
    "ask_sync",
    "ask_watch",
    "call_tool",
]


# What a command line session opens with: a handshake the daemon's front answers from its
# snapshot at once (imprint.daemon.front), so no MCP code loads on either side to say hello.
_CLI_PROTOCOL = "2025-06-18"


def _reply(reader: Any, rid: int) -> dict[str, Any]:
    """The JSON-RPC reply with id `rid`; notifications (progress, logs) before it skipped."""
    while line := reader.readline():
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict) and message.get("id") == rid:
            return message
    raise DaemonError("daemon: it closed the session before answering; see its log")


def call_tool(data_dir: Path, tool: str, args: dict[str, Any]) -> tuple[bool, str]:
    """Call one MCP tool of the data dir's running daemon over its socket, in plain
    newline-delimited JSON-RPC (the standard library only, no MCP client: a command the
    daemon answers starts in tens of milliseconds): (is_error, the tool's text)."""
    from imprint import __version__

    sock = open_session(data_dir)
    try:
        reader = sock.makefile("rb")
        hello = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": _CLI_PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "imprint-cli", "version": __version__},
            },
        }
        sock.sendall((json.dumps(hello) + "\n").encode())
        opened = _reply(reader, 1)
        if "result" not in opened:
            raise DaemonError(f"daemon: it refused the session: {opened.get('error')}")
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call"}
        call["params"] = {"name": tool, "arguments": args}
        ready = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        sock.sendall((json.dumps(ready) + "\n" + json.dumps(call) + "\n").encode())
        answer = _reply(reader, 2)
    finally:
        sock.close()
    result = answer.get("result")
    if not isinstance(result, dict):
        error = answer.get("error")
        message = error.get("message") if isinstance(error, dict) else None
        raise DaemonError(f"{tool}: {message or 'the daemon gave no result'}")
    content = result.get("content") or [{}]
    text = content[0].get("text", "") if isinstance(content[0], dict) else ""
    return bool(result.get("isError")), str(text)


def _request(data_dir: Path, request: Request) -> tuple[socket.socket, BinaryIO, dict[str, Any]]:
    """Send a hello that is a request (not an MCP session), naming this data dir, and read
    the first line of its answer (the reader holds what follows). A daemon of another data
    dir (found through a copied run file) refuses it unrun: this data dir's own daemon is
    asked instead, started if none runs."""
    serves = identity(data_dir)
    line = hello_line(request, serves, os.getpid())
    for trust in (True, False):
        sock = connect(data_dir, trust_run_file=trust)
        sock.sendall(line)
        reader = sock.makefile("rb")
        try:
            reply = json.loads(reader.readline() or b"{}")
        except ValueError:
            reply = {}
        reply = reply if isinstance(reply, dict) else {}
        try:
            check_served(reply, serves)
        except OtherDataDir:
            reader.close()
            sock.close()
            continue
        return sock, reader, reply
    raise DaemonError(f"daemon: no daemon serving {data_dir} answered; see {data_dir}/run")


def _ask(data_dir: Path, request: Request) -> tuple[socket.socket, dict[str, Any]]:
    """Send a hello that is a request and read its one-line answer."""
    sock, reader, reply = _request(data_dir, request)
    reader.close()  # the socket stays open: the dashboard's is held while it serves
    return sock, reply


def ask_status(data_dir: Path, workspace: str, check: bool) -> dict[str, Any]:
    """The status row of the data dir's owner (its fields as JSON), as the status tool
    computes it."""
    sock, reply = _ask(data_dir, StatusRequest(workspace, check))
    sock.close()
    if "row" not in reply:
        why = reply.get("error") or "the owner closed the connection; see its log"
        raise DaemonError(str(why).splitlines()[0])
    return dict(reply["row"])


def ask_status_text(data_dir: Path, workspace: str, check: bool) -> tuple[str, bool] | None:
    """`imprint status`'s whole text as the data dir's running daemon composes it, and
    whether its indexes agree; None from a daemon that sends no text (an older one)."""
    sock, reply = _ask(data_dir, StatusRequest(workspace, check, text=True))
    sock.close()
    if not isinstance(reply.get("row"), dict):
        why = reply.get("error") or "the owner closed the connection; see its log"
        raise DaemonError(str(why).splitlines()[0])
    text, consistent = reply.get("text"), reply.get("consistent")
    if not isinstance(text, str) or not isinstance(consistent, bool):
        return None
    return text, consistent


def ask_dashboard(data_dir: Path, port: int) -> tuple[socket.socket, dict[str, Any]]:
    """Ask the data dir's owner (starting the daemon if none runs) to serve the dashboard.
    The owner serves it while the returned socket stays open."""
    sock, reply = _ask(data_dir, DashboardRequest(port))
    if "url" not in reply:
        sock.close()
        why = reply.get("error") or "the owner closed the connection; see its log"
        raise DaemonError(f"dashboard: {why}")
    return sock, reply


def ask_hook(data_dir: Path, request: dict[str, Any]) -> str:
    """The context the data dir's owner (the daemon, started if none runs) adds for one
    hook event (`imprint hook`); empty when it has none."""
    sock, reply = _ask(data_dir, HookAsk(request))
    sock.close()
    if not isinstance(reply.get("context"), str):
        why = reply.get("error") or "the owner closed the connection; see its log"
        raise DaemonError(str(why).splitlines()[0])
    return str(reply["context"])


def ask_backup(data_dir: Path, dest: str) -> str:
    """Have the data dir's owner back its workspaces up into `dest` (empty: its default
    folder); the line saying what it wrote where."""
    sock, reply = _ask(data_dir, BackupRequest(dest))
    sock.close()
    if not isinstance(reply.get("done"), str):
        why = reply.get("error") or "the owner closed the connection; see its log"
        raise DaemonError(str(why).splitlines()[0])
    return str(reply["done"])


def ask_sync(data_dir: Path, folder: str, workspace: str, all_: bool) -> str:
    """Have the data dir's owner sync through `folder` (`imprint.writes.sync`), its writers
    writing what it takes; the line saying what it wrote and read."""
    sock, reply = _ask(data_dir, SyncRequest(folder, workspace, all_))
    sock.close()
    if not isinstance(reply.get("done"), str):
        why = reply.get("error") or "the owner closed the connection; see its log"
        raise DaemonError(str(why).splitlines()[0])
    return str(reply["done"])


def ask_watch(data_dir: Path, request: dict[str, Any]) -> list[dict[str, Any]]:
    """Have the data dir's owner (the daemon, started if none runs) add, list or stop a
    watched folder (`imprint watch`); the rows of the folders concerned."""
    sock, reply = _ask(data_dir, WatchAsk(request))
    sock.close()
    if not isinstance(reply.get("rows"), list):
        why = reply.get("error") or "the owner closed the connection; see its log"
        raise DaemonError(str(why).splitlines()[0])
    return [dict(r) for r in reply["rows"]]


def ask_import(
    data_dir: Path,
    path: Path,
    workspace: str,
    on_total: Callable[[int], None],
    on_progress: Callable[[int], None],
    replace: bool = False,
) -> str:
    """Have the data dir's owner import the export file at `path` (`imprint import` beside
    a daemon), reporting its progress; the line saying what it wrote."""
    asked = ImportRequest(str(path), workspace, replace)
    sock, reader, first = _request(data_dir, asked)
    try:
        for line in itertools.chain([json.dumps(first).encode()] if first else [], reader):
            try:
                reply = json.loads(line)
            except ValueError:
                break
            if not isinstance(reply, dict):
                break
            if isinstance(reply.get("total"), int):
                on_total(reply["total"])
            elif isinstance(reply.get("progress"), int):
                on_progress(reply["progress"])
            elif isinstance(reply.get("done"), str):
                return str(reply["done"])
            else:
                why = reply.get("error") or "the owner's answer was not understood"
                raise DaemonError(str(why).splitlines()[0])
    finally:
        reader.close()
        sock.close()
    raise DaemonError("import: the owner closed the connection before it finished; see its log")
