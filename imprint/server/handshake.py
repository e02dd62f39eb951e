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

__all__ = ["HANDSHAKE_FILE", "handshake_snapshot", "load_handshake", "write_handshake"]

HANDSHAKE_FILE = Path(__file__).with_name("handshake.json")


def load_handshake(path: Path = HANDSHAKE_FILE) -> dict[str, Any] | None:
    """The static `initialize` and tools/list replies per protocol version (written by
    `write_handshake`); None when the file is missing or not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    versions = data.get("versions") if isinstance(data, dict) else None
    if not isinstance(versions, dict) or data.get("latest") not in versions:
        return None
    return dict(data)


def handshake_snapshot() -> dict[str, Any]:
    """The `initialize` and tools/list results, for every protocol version that opens with
    `initialize`, exactly as a session of this server writes them.

    The daemon answers both from this snapshot (`imprint/server/handshake.json`) while
    MCP's own imports and the runtime are still loading; tests/test_handshake.py holds it
    equal to what the server answers live.
    """
    from importlib.metadata import version

    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

    from imprint.actors.lifecycle import Runtime
    from imprint.config import Config
    from imprint.server.app import build_server

    # Registering the tools touches no store: an unstarted runtime is enough.
    runtime = Runtime(Path(os.devnull), Config())
    versions = {v: _answers(build_server(runtime), v) for v in HANDSHAKE_PROTOCOL_VERSIONS}
    return {
        "mcp": version("mcp"),
        "imprint": __version__,
        "latest": LATEST_HANDSHAKE_VERSION,
        "versions": versions,
    }


def _answers(server: MCPServer, protocol: str) -> dict[str, Any]:
    """What one session answers to `initialize` (at `protocol`) and then tools/list."""
    import anyio

    from imprint.server.wire import serve_lines

    ours, theirs = socket.socketpair()
    with ours, theirs:
        reader = ours.makefile("r", encoding="utf-8", newline="\n")
        writer = ours.makefile("w", encoding="utf-8", newline="\n")
        thread = threading.Thread(target=anyio.run, args=(serve_lines, server, reader, writer))
        thread.start()
        params = {
            "protocolVersion": protocol,
            "capabilities": {},
            "clientInfo": {"name": "imprint-snapshot", "version": __version__},
        }
        requests = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        ]
        theirs.sendall("".join(json.dumps(r) + "\n" for r in requests).encode())
        replies: dict[int, Any] = {}
        with theirs.makefile("rb") as lines:
            while len(replies) < 2:
                msg = json.loads(lines.readline())
                if msg.get("id") in (1, 2):
                    replies[msg["id"]] = msg["result"]
        theirs.shutdown(socket.SHUT_WR)
        thread.join(timeout=60)
        reader.close()
        writer.close()
    return {"initialize": replies[1], "tools/list": replies[2]}


def write_handshake(path: Path = HANDSHAKE_FILE) -> Path:
    """Write `handshake_snapshot()` where the daemon reads it."""
    snapshot = handshake_snapshot()
    path.write_text(json.dumps(snapshot, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path
