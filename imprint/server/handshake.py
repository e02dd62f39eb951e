"""The handshake snapshot: what a session of this server answers first, written down.

The daemon's front (`imprint.daemon.front`) answers a client's opening requests from
`handshake.json` while MCP's own imports and the runtime are still loading. This module
reads and writes that file; it imports no MCP until it writes, so the daemon can read the
snapshot before MCP is loaded. After changing a tool, run `python -m imprint.server`.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from imprint import __version__

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

__all__ = [
    "HANDSHAKE_FILE",
    "handshake_snapshot",
    "load_handshake",
    "session_replies",
    "write_handshake",
]

HANDSHAKE_FILE = Path(__file__).with_name("handshake.json")


def load_handshake(path: Path = HANDSHAKE_FILE) -> dict[str, Any] | None:
    """The static replies per protocol version (written by `write_handshake`): `initialize`
    and tools/list under "versions", `server/discover` and tools/list under "modern"; None
    when the file is missing or not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    versions = data.get("versions") if isinstance(data, dict) else None
    if not isinstance(versions, dict) or data.get("latest") not in versions:
        return None
    if not isinstance(data.get("modern"), dict):
        return None
    return dict(data)


def handshake_snapshot() -> dict[str, Any]:
    """What a session of this server answers first, exactly as it writes it: for every
    protocol version that opens with `initialize`, the `initialize` and tools/list results
    ("versions"); for every 2026-era version (a per-request `_meta` envelope, no handshake),
    the `server/discover` and tools/list results ("modern").

    The daemon answers these from this snapshot (`imprint/server/handshake.json`) while
    MCP's own imports and the runtime are still loading; tests/test_handshake.py holds it
    equal to what the server answers live.
    """
    from importlib.metadata import version

    from mcp_types.version import (
        HANDSHAKE_PROTOCOL_VERSIONS,
        LATEST_HANDSHAKE_VERSION,
        MODERN_PROTOCOL_VERSIONS,
    )

    from imprint.actors.lifecycle import Runtime
    from imprint.config import Config
    from imprint.server.app import build_server

    # Registering the tools touches no store: an unstarted runtime is enough.
    runtime = Runtime(Path(os.devnull), Config())
    legacy = {v: _legacy_answers(build_server(runtime), v) for v in HANDSHAKE_PROTOCOL_VERSIONS}
    modern = {v: _modern_answers(build_server(runtime), v) for v in MODERN_PROTOCOL_VERSIONS}
    return {
        "mcp": version("mcp"),
        "imprint": __version__,
        "latest": LATEST_HANDSHAKE_VERSION,
        "versions": legacy,
        "modern": modern,
    }


_CLIENT = {"name": "imprint-snapshot", "version": __version__}


def _legacy_answers(server: MCPServer, protocol: str) -> dict[str, Any]:
    """What one session answers to `initialize` (at `protocol`) and then tools/list."""
    params = {"protocolVersion": protocol, "capabilities": {}, "clientInfo": _CLIENT}
    requests: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    replies = session_replies(server, requests)
    return {"initialize": replies[1]["result"], "tools/list": replies[2]["result"]}


def _modern_answers(server: MCPServer, protocol: str) -> dict[str, Any]:
    """What one session answers to `server/discover` and then tools/list, each carrying
    the `_meta` envelope of `protocol`."""
    from mcp_types import (
        CLIENT_CAPABILITIES_META_KEY,
        CLIENT_INFO_META_KEY,
        PROTOCOL_VERSION_META_KEY,
    )

    meta = {
        PROTOCOL_VERSION_META_KEY: protocol,
        CLIENT_CAPABILITIES_META_KEY: {},
        CLIENT_INFO_META_KEY: _CLIENT,
    }
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta}},
    ]
    replies = session_replies(server, requests)
    return {"server/discover": replies[1]["result"], "tools/list": replies[2]["result"]}


def session_replies(server: MCPServer, requests: list[dict[str, Any]]) -> dict[Any, Any]:
    """What one session of `server` answers to `requests` (sent in one go, in order): each
    reply, by its request's id."""
    import anyio

    from imprint.server.wire import serve_lines

    ids = {r["id"] for r in requests if "id" in r}
    ours, theirs = socket.socketpair()
    with ours, theirs:
        reader = ours.makefile("r", encoding="utf-8", newline="\n")
        writer = ours.makefile("w", encoding="utf-8", newline="\n")
        thread = threading.Thread(target=anyio.run, args=(serve_lines, server, reader, writer))
        thread.start()
        theirs.sendall("".join(json.dumps(r) + "\n" for r in requests).encode())
        replies: dict[Any, Any] = {}
        with theirs.makefile("rb") as lines:
            while len(replies) < len(ids):
                msg = json.loads(lines.readline())
                if msg.get("id") in ids:
                    replies[msg["id"]] = msg
        theirs.shutdown(socket.SHUT_WR)
        thread.join(timeout=60)
        reader.close()
        writer.close()
    return replies


def write_handshake(path: Path = HANDSHAKE_FILE) -> Path:
    """Write `handshake_snapshot()` where the daemon reads it."""
    snapshot = handshake_snapshot()
    path.write_text(json.dumps(snapshot, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path
