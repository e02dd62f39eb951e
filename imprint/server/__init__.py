"""The MCP server, one module per idea: `app` (the SDK's MCPServer with Imprint's 17 tools),
`error_lines` (errors as one short line), `schema` (portable tool schemas), `wire` (a session
over newline-delimited JSON-RPC), `handshake` (the snapshot the daemon answers from) and
`http_auth` (bearer auth for `serve --http`).

The names below load their module at first use: the daemon reads the handshake snapshot
before MCP (about a second of imports) is loaded, and importing this package must not load it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from imprint.server.app import INSTRUCTIONS, ImprintServer, build_server, tool_modules
    from imprint.server.error_lines import MAX_ERROR_CHARS, bounded
    from imprint.server.handshake import (
        handshake_snapshot,
        load_handshake,
        session_replies,
        write_handshake,
    )
    from imprint.server.http_auth import (
        BearerAuth,
        BearerToken,
        client_config_lines,
        http_app,
        http_token,
        http_token_path,
        token_hint_lines,
    )
    from imprint.server.schema import portable, untitled
    from imprint.server.wire import read_line, serve_lines

__all__ = [
    "INSTRUCTIONS",
    "MAX_ERROR_CHARS",
    "BearerAuth",
    "BearerToken",
    "ImprintServer",
    "bounded",
    "build_server",
    "client_config_lines",
    "handshake_snapshot",
    "http_app",
    "http_token",
    "http_token_path",
    "load_handshake",
    "portable",
    "read_line",
    "serve_lines",
    "session_replies",
    "token_hint_lines",
    "tool_modules",
    "untitled",
    "write_handshake",
]

_MODULE_OF = {
    "INSTRUCTIONS": "app",
    "ImprintServer": "app",
    "build_server": "app",
    "tool_modules": "app",
    "MAX_ERROR_CHARS": "error_lines",
    "bounded": "error_lines",
    "handshake_snapshot": "handshake",
    "load_handshake": "handshake",
    "session_replies": "handshake",
    "write_handshake": "handshake",
    "BearerAuth": "http_auth",
    "BearerToken": "http_auth",
    "client_config_lines": "http_auth",
    "http_app": "http_auth",
    "http_token": "http_auth",
    "http_token_path": "http_auth",
    "token_hint_lines": "http_auth",
    "portable": "schema",
    "untitled": "schema",
    "read_line": "wire",
    "serve_lines": "wire",
}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # found once; later lookups (and monkeypatch) see a plain attribute
    return value
