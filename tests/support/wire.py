"""What tests send and read on a raw connection: a legacy `initialize` request, and every
byte a server sends until it closes."""

from __future__ import annotations

import socket
from typing import Any

__all__ = ["initialize_request", "read_until_closed"]


def initialize_request(client: str = "test") -> dict[str, Any]:
    """A legacy (2025-06-18) `initialize` with id 1 from a client named `client`."""
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": client, "version": "1"},
        },
    }


def read_until_closed(sock: socket.socket) -> bytes:
    """Everything the peer sent until it closed (a reset counts as closed); the socket's
    own timeout bounds the wait, so a server that never closes fails the test."""
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except ConnectionResetError:
        pass
    return data
